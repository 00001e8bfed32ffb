// SPDX-License-Identifier: Apache-2.0
// The bad-input corpus (tests/bad_inputs): every case in cases.tsv runs the real `scalebench
// train` (or `run`, for suites) on its file and must print one sentence holding the expected
// text on stderr, exit 2 within 10 s, and leave no result file behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace sb::testing {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(SB_SOURCE_DIR) / "tests" / "bad_inputs";

struct CorpusCase {
  std::string name, command, file, args, expected;
  // command: train | run; file: under configs/; args: after the file
};

void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.name; }

// cases.tsv: name <TAB> command <TAB> file <TAB> extra arguments <TAB> expected text; '#' starts a
// comment.
std::vector<CorpusCase> load_cases() {
  std::ifstream in(kCorpus / "cases.tsv");
  std::vector<CorpusCase> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, '\t');) fields.push_back(field);
    if (fields.size() != 5) throw std::runtime_error("cases.tsv: not 5 tab-separated fields: " + line);
    cases.push_back({fields[0], fields[1], fields[2], fields[3], fields[4]});
  }
  return cases;
}

class BadInputCorpus : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(BadInputCorpus, OneSentenceExitTwoNothingWritten) {
  const CorpusCase& c = GetParam();
  Scratch scratch;
  const auto results = scratch.path("results");
  std::filesystem::create_directories(results);
  const auto config = std::filesystem::path("configs") / c.file;
  ASSERT_TRUE(std::filesystem::exists(kCorpus / config)) << config;
  const std::string target = c.command == "run" ? "--out " + results.string()
                                                : "--out " + (results / "out.h5").string();
  // relative data paths in the configs are relative to the corpus folder
  const auto out = scratch.path("stdout.txt"), err = scratch.path("stderr.txt");
  const std::string command = "cd '" + kCorpus.string() + "' && " + SB_EXE + " " + c.command + " " +
                              (c.command == "run" ? "" : "--config ") + config.string() + " " + target + " " +
                              c.args + " >" + out.string() + " 2>" + err.string();
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream err_in(err);
  const std::string stderr_text((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << stderr_text;
  EXPECT_LT(seconds, 10.0) << "took " << seconds << " s";
  EXPECT_EQ(WEXITSTATUS(status), 2) << stderr_text;
  EXPECT_NE(stderr_text.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << stderr_text;
  EXPECT_EQ(std::count(stderr_text.begin(), stderr_text.end(), '\n'), 1) << stderr_text;
  EXPECT_EQ(stderr_text.rfind("scalebench: error: ", 0), 0u) << stderr_text;
  EXPECT_TRUE(std::filesystem::is_empty(results)) << "a result file was left behind";
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputCorpus, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& info) { return info.param.name; });

TEST(BadInputCorpusTable, EveryFileHasACaseAndThereAreThirty) {
  const std::vector<CorpusCase> cases = load_cases();
  EXPECT_GE(cases.size(), 30u);
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus / "configs")) {
    const std::string file = entry.path().filename().string();
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const CorpusCase& c) { return c.file == file; }))
        << entry.path() << " has no line in cases.tsv";
  }
}

}  // namespace
}  // namespace sb::testing
