// SPDX-License-Identifier: Apache-2.0
// The SpamAssassin loader on the installed corpus: split sizes and labels, the subset as a
// prefix of the fixed training order, the Subject + body encoding, and the refusals for a
// missing or incomplete folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "core/check.hpp"
#include "data/spam_corpus.hpp"
#include "tests/test_support.hpp"

namespace sb::data {
namespace {

namespace fs = std::filesystem;

fs::path spam_dir() { return testing::test_data_dir() / "spam-assassin"; }

std::int64_t spam_count(const EncodedMessages& m) { return std::accumulate(m.labels.begin(), m.labels.end(), 0LL); }

TEST(SpamCorpus, FixedSplitOfEveryFifthMessageWithItsLabels) {
  const SpamCorpus c = load_spam_assassin(spam_dir(), 64, 0);
  EXPECT_EQ(c.train.count, 4837);
  EXPECT_EQ(c.test.count, 1209);
  // a fifth of each folder is test: 100 of spam-1's 500, 279 of spam-2's 1396 (index % 5 == 4)
  EXPECT_EQ(spam_count(c.test), 100 + 279);
  EXPECT_EQ(spam_count(c.train) + spam_count(c.test), 500 + 1396);
  ASSERT_EQ(c.test.tokens.size(), static_cast<std::size_t>(1209 * 64));
  for (std::int64_t i = 0; i < c.test.count; ++i) {
    const std::int32_t n = c.test.lengths[static_cast<std::size_t>(i)];
    ASSERT_TRUE(n >= 1 && n <= 64) << i;
    for (std::int64_t t = n; t < 64; ++t) ASSERT_EQ(c.test.tokens[static_cast<std::size_t>(i * 64 + t)], 0);
  }
}

TEST(SpamCorpus, SubsetIsThePrefixOfTheFixedTrainingOrder) {
  const SpamCorpus all = load_spam_assassin(spam_dir(), 32, 0), subset = load_spam_assassin(spam_dir(), 32, 200);
  ASSERT_EQ(subset.train.count, 200);
  EXPECT_TRUE(std::equal(subset.train.tokens.begin(), subset.train.tokens.end(), all.train.tokens.begin()));
  EXPECT_TRUE(std::equal(subset.train.labels.begin(), subset.train.labels.end(), all.train.labels.begin()));
  EXPECT_EQ(subset.test.tokens, all.test.tokens);
  // shuffled: spam (the last folders in file order) is spread through the first 200
  EXPECT_GT(spam_count(subset.train), 30);
  EXPECT_LT(spam_count(subset.train), 100);
}

TEST(SpamCorpus, SubjectLineThenBody) {
  EXPECT_EQ(subject_and_body("From a@b  Thu\nReceived: x\nSUBJECT: Win $$$\nTo: c\n\nBody line\nmore\n"),
            "SUBJECT: Win $$$\nBody line\nmore\n");
  EXPECT_EQ(subject_and_body("From: a\r\nSubject: hi\r\n\r\nbody\r\n"), "Subject: hi\nbody\r\n");
  EXPECT_EQ(subject_and_body("From: a\n\nno subject\n"), "no subject\n");
  EXPECT_EQ(subject_and_body("From: a\n"), "\n");  // headers only: never empty
}

TEST(SpamCorpus, RefusalsNameTheFolder) {
  try {
    load_spam_assassin("/no/such/spam", 32, 0);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("SpamAssassin data folder '/no/such/spam' does not exist"),
              std::string::npos)
        << e.what();
  }
  const fs::path partial = fs::temp_directory_path() / ("sb_spam_" + std::to_string(::getpid()));
  fs::create_directories(partial / "easy-ham-1");
  try {
    load_spam_assassin(partial, 32, 0);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 0 messages (*.txt) but the SpamAssassin corpus has 2500 there"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(partial);
  try {
    load_spam_assassin(spam_dir(), 32, 4838);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train_samples 4838 exceeds the 4837 training messages"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sb::data
