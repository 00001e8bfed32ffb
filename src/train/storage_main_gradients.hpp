// SPDX-License-Identifier: Apache-2.0
// precision.main_grads storage: the main gradients kept, accumulated over micro-batches and
// reduced over the data-parallel ranks in the 16-bit storage type (bf16 or fp16), as Megatron-LM
// keeps them without --accumulate-allreduce-grads-in-fp32 and as ZeRO's 2 + 2 + K bytes per
// parameter count them. Backward still writes each range in fp32 (the wgrad GEMM's
// accumulator): as the range is reported it is added into the 16-bit main gradients (one
// rounding) and its pages are given back, so the fp32 gradients are resident only while backward
// writes them. In the last micro-batch the sums go into buckets of a 16-bit comm buffer in the
// order backward finishes them (a range's last report of the step, so model chunks of an
// interleaved pipeline stage may finish in any order), each all-reduced in 16 bits (strategy.allreduce ring: our ring,
// adding in fp32 and rounding each partial sum; mpi: MPI_Iallreduce with a user-defined sum) as
// soon as it is full, overlapping the rest of backward; finish() waits for them and
// writes the mean back into the main gradients. Under ZeRO-1 (`Reduction::scatter`, Megatron-LM's
// distributed optimizer with 16-bit gradients) nothing is reduced during backward: finish()
// reduce-scatters the main gradients in 16 bits over the data-parallel ranks and writes this
// rank's shard of the mean into place, the only part its optimizer reads. The optimizer widens
// them chunk by chunk (optim/storage_gradients.hpp). Host memory only. Leaves out ZeRO-2/3
// (reductions of fp32 gradient shards) and the pipeline schedule (a pipeline stage calls
// ready() during each micro-batch's backward, as without one).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "optim/parameter_slice.hpp"
#include "parallel/communicator.hpp"
#include "train/data_parallel.hpp"
#include "train/gradient_page_return.hpp"
#include "train/gradient_sync.hpp"

namespace sb::train {

class StorageMainGradients final : public GradientSync {
 public:
  // `gradients`: the model's fp32 gradients, in `gradient_pages` (charged by resident pages);
  // `storage`: bf16 or f16; `micro_batches`: this rank's per step (the last one's sums are
  // reduced as backward finishes them).
  // `reduction`: all_reduce (every rank's optimizer reads every mean) or scatter (ZeRO-1: rank r
  // keeps the mean of [r·shard, (r+1)·shard), shard = ceil(parameters / dp), as ZeroSharding).
  enum class Reduction { all_reduce, scatter };
  StorageMainGradients(parallel::Communicator& dp, std::span<float> gradients, TrackedBuffer* gradient_pages,
                       parallel::DataType storage, std::int64_t micro_batches, std::int64_t bucket_bytes,
                       bool overlap, const std::string& algorithm, MemoryTracker& tracker,
                       Reduction reduction = Reduction::all_reduce);
  void ready(std::int64_t offset, std::int64_t count) override;
  bool reduces_every_micro_batch() const override { return true; }
  void micro_batch_done() override;
  void finish(double local_scale) override;
  SixteenBitGradients sixteen_bit_gradients(std::int64_t offset, std::int64_t count) override;

  // The model's slices with their gradients read from the 16-bit main gradients.
  std::vector<optim::ParameterSlice> main_gradient_slices(const std::vector<optim::ParameterSlice>& model_slices) const;
  // Every main gradient, as bits of the storage type (flat order, as the model's gradients).
  std::span<std::uint16_t> main_gradients() const;
  const GradientExchangeFigures& last_step() const { return figures_; }

 private:
  // into[i] = storage(main[offset + i] + fp32 gradient[offset + i]) for i < count
  void add_into(std::uint16_t* into, std::int64_t offset, std::int64_t count) const;
  parallel::Request start_bucket(std::int64_t begin, std::int64_t count, int index);
  bool reduces() const { return dp_.size() > 1; }
  bool buckets() const { return reduces() && reduction_ == Reduction::all_reduce; }
  void reduce_scatter(float scale);

  parallel::Communicator& dp_;
  std::span<float> gradients_;
  GradientPageReturn pages_;
  parallel::DataType storage_;
  std::int64_t micro_batches_;
  // this step's reports of each range (by its offset): the micro_batches_-th is its last
  // micro-batch's, whatever order model chunks run in (interleaved pipeline stages)
  std::unordered_map<std::int64_t, std::int64_t> reports_;
  std::int64_t reported_elements_ = 0;  // this step's, every micro-batch's
  bool ring_;
  TrackedBuffer main_;    // grads: (parameters) of the storage type, flat order
  Reduction reduction_;
  std::int64_t shard_ = 0;  // scatter: ceil(parameters / dp)
  TrackedBuffer packed_;  // comm: all_reduce, (parameters) of the storage type in ready order; scatter,
                          // (dp·shard) in flat order, then (shard) the reduced shard (dp > 1)
  PackedBuckets buckets_;  // of packed_, the last micro-batch's sums
  bool step_open_ = false;
  GradientExchangeFigures figures_;
};

}  // namespace sb::train
