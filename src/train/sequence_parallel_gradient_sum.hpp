// SPDX-License-Identifier: Apache-2.0
// Sequence parallelism's LayerNorm gradients summed over the tp ranks before the data-parallel
// exchange takes them. Leaves out how they travel over dp (data_parallel.hpp) and how the model
// splits its rows (models/gpt).
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "parallel/communicator.hpp"
#include "train/gradient_sync.hpp"

namespace sb::train {

// Under sequence parallelism each tp rank computes its LayerNorm gradients from its own B·T/tp
// token rows, so the full gradient is their sum over tp. Wrapping the data-parallel sync, this
// sums each such range over tp as backward reports it, before the exchange copies or reduces
// it: plain dp, ZeRO-1 and ZeRO-2 (which reduces every micro-batch's ranges during backward
// into a shard, when no full reduced gradient is left to sum afterwards) then all exchange what
// one rank holding every row would. Every tp rank reports the same ranges in the same order (the
// same blocks), so the blocking sums pair up.
class SequenceParallelGradientSum final : public GradientSync {
 public:
  // gradients: the flat buffer the offsets of ready() index; summed: the ranges of it that
  // are summed over tp (each a whole parameter tensor of a chunk).
  SequenceParallelGradientSum(parallel::Communicator& tp, GradientSync& inner, std::span<float> gradients,
                              const std::vector<std::span<float>>& summed);
  void ready(std::int64_t offset, std::int64_t count) override;
  bool reduces_every_micro_batch() const override { return inner_.reduces_every_micro_batch(); }
  void micro_batch_done() override { inner_.micro_batch_done(); }
  void finish(double local_scale) override { inner_.finish(local_scale); }
  SixteenBitGradients sixteen_bit_gradients(std::int64_t offset, std::int64_t count) override {
    return inner_.sixteen_bit_gradients(offset, count);
  }
  GradientSync& inner() const { return inner_; }

 private:
  parallel::Communicator& tp_;
  GradientSync& inner_;
  std::span<float> gradients_;
  std::vector<std::pair<std::int64_t, std::int64_t>> summed_;  // [begin, end) offsets, sorted
};

}  // namespace sb::train
