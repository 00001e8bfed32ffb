// SPDX-License-Identifier: Apache-2.0
// 16-bit main gradients: accumulated from backward's fp32 ranges, reduced in buckets.
#include "train/storage_main_gradients.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"
#include "parallel/ring.hpp"
#include "parallel/zero_shard.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "train/sixteen_bit_arrays.hpp"

namespace sb::train {

namespace {

using parallel::comm_clock_seconds;

}  // namespace

StorageMainGradients::StorageMainGradients(parallel::Communicator& dp, std::span<float> gradients,
                                           TrackedBuffer* gradient_pages, parallel::DataType storage,
                                           std::int64_t micro_batches, std::int64_t bucket_bytes, bool overlap,
                                           const std::string& algorithm, MemoryTracker& tracker,
                                           Reduction reduction)
    : dp_(dp),
      gradients_(gradients),
      pages_(gradient_pages, gradients, "precision.main_grads storage"),
      storage_(storage),
      micro_batches_(micro_batches),
      ring_(algorithm == "ring"),
      reduction_(reduction),
      shard_(parallel::zero_shard_size(static_cast<std::int64_t>(gradients.size()), dp.size())),
      buckets_(bucket_bytes / 2, overlap, [this](std::int64_t begin, std::int64_t count, int index) {
        return start_bucket(begin, count, index);
      }) {
  SB_USER_CHECK(algorithm == "ring" || algorithm == "mpi", "strategy.allreduce '{}' is not ring or mpi", algorithm);
  SB_CHECK(storage == parallel::DataType::bf16 || storage == parallel::DataType::f16,
           "16-bit main gradients of type {}", parallel::to_string(storage));
  SB_CHECK(micro_batches >= 1, "{} micro-batches a step", micro_batches);
  SB_USER_CHECK(bucket_bytes > 0, "strategy.bucket_mb must be positive");
  const auto bytes = static_cast<std::int64_t>(gradients.size() * sizeof(std::uint16_t));
  main_ = TrackedBuffer(tracker, MemoryCategory::grads, bytes,
                        fmt::format("{} main gradients", parallel::to_string(storage)));
  if (buckets())
    packed_ = TrackedBuffer(tracker, MemoryCategory::comm, bytes,
                            fmt::format("dp all-reduce buckets ({})", parallel::to_string(storage)));
  else if (reduces())
    packed_ = TrackedBuffer(tracker, MemoryCategory::comm,
                            (dp.size() + 1) * shard_ * static_cast<std::int64_t>(sizeof(std::uint16_t)),
                            fmt::format("zero-1 padded reduce-scatter ({})", parallel::to_string(storage)));
}

std::span<std::uint16_t> StorageMainGradients::main_gradients() const {
  return {main_.as<std::uint16_t>(), gradients_.size()};
}

std::vector<optim::ParameterSlice> StorageMainGradients::main_gradient_slices(
    const std::vector<optim::ParameterSlice>& model_slices) const {
  std::vector<optim::ParameterSlice> slices = model_slices;
  const optim::GradientStorage storage =
      storage_ == parallel::DataType::bf16 ? optim::GradientStorage::bf16 : optim::GradientStorage::fp16;
  for (optim::ParameterSlice& slice : slices) {
    const std::ptrdiff_t offset = slice.grad - gradients_.data();
    SB_CHECK(offset >= 0 && offset + slice.numel <= static_cast<std::ptrdiff_t>(gradients_.size()),
             "parameter slice '{}' outside the model's gradients", slice.name);
    slice.grad = nullptr;
    slice.grad_bits = main_.as<std::uint16_t>() + offset;
    slice.grad_storage = storage;
  }
  return slices;
}

GradientSync::SixteenBitGradients StorageMainGradients::sixteen_bit_gradients(std::int64_t offset,
                                                                             std::int64_t count) {
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= static_cast<std::int64_t>(gradients_.size()),
           "16-bit main gradients [{}, {}) outside the model's {}", offset, offset + count, gradients_.size());
  return {main_gradients().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(count)), storage_};
}

void StorageMainGradients::add_into(std::uint16_t* into, std::int64_t offset, std::int64_t count) const {
  add_scaled(storage_, into, main_.as<std::uint16_t>() + offset, 1.0f, gradients_.data() + offset, count);
}

parallel::Request StorageMainGradients::start_bucket(std::int64_t begin, std::int64_t count, int index) {
  std::uint16_t* data = packed_.as<std::uint16_t>() + begin;
  constexpr int kRingTagBase = 1000;  // one tag per bucket in flight
  if (!ring_) return dp_.iall_reduce(data, count, storage_, parallel::ReduceOp::sum);
  if (storage_ == parallel::DataType::bf16)
    return parallel::ring_iall_reduce(dp_, reinterpret_cast<bf16*>(data), count, kRingTagBase + index,
                                      &figures_.bytes_sent);
  return parallel::ring_iall_reduce(dp_, reinterpret_cast<fp16*>(data), count, kRingTagBase + index,
                                    &figures_.bytes_sent);
}

void StorageMainGradients::ready(std::int64_t offset, std::int64_t count) {
  const double entered_s = comm_clock_seconds(), entered_cpu_s = process_cpu_seconds();
  const auto total = static_cast<std::int64_t>(gradients_.size());
  if (!step_open_) {  // the step's first range: the main gradients start from zero
    std::fill_n(main_.as<std::uint16_t>(), total, std::uint16_t{0});
    figures_ = {};
    figures_.bytes_sent = ring_ ? 0 : -1;
    step_open_ = true;
  }
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= total && buckets_.packed() + count <= total,
           "gradient range [{}, {}) outside the model's {} gradients (or reported twice)", offset, offset + count,
           total);
  pages_.recharge();  // what backward wrote since the last range: the peak
  const std::int64_t report = ++reports_[offset];
  SB_CHECK(report <= micro_batches_, "gradient range at {} reported {} times in a step of {} micro-batches", offset,
           report, micro_batches_);
  reported_elements_ += count;
  if (report < micro_batches_ || !buckets()) {
    add_into(main_.as<std::uint16_t>() + offset, offset, count);
  } else {  // the last micro-batch: the sums into the buckets, reduced as they fill
    add_into(packed_.as<std::uint16_t>() + buckets_.packed(), offset, count);
    buckets_.add(offset, count);
  }
  pages_.consumed(offset, offset + count);
  figures_.in_backward_s += comm_clock_seconds() - entered_s;
  figures_.cpu_in_backward_s += process_cpu_seconds() - entered_cpu_s;
}

// (a page straddling two model chunks of an interleaved stage may wait for the other chunk's
// backward: whether every gradient was reported is checked at the end of the step)
void StorageMainGradients::micro_batch_done() { pages_.recharge(); }

// ZeRO-1: every rank's main gradients, padded to dp·shard, reduce-scattered in 16 bits (MPI with
// the user-defined sum); this rank's block of the sum, scaled, into its shard of the main
// gradients (one rounding each way, as the all-reduce's).
void StorageMainGradients::reduce_scatter(float scale) {
  const auto n = static_cast<std::int64_t>(gradients_.size());
  std::uint16_t* padded = packed_.as<std::uint16_t>();
  std::uint16_t* reduced = padded + dp_.size() * shard_;
  std::copy_n(main_.as<std::uint16_t>(), n, padded);
  std::fill(padded + n, reduced, std::uint16_t{0});
  dp_.ireduce_scatter(padded, reduced, shard_, storage_, parallel::ReduceOp::sum).wait();
  const std::int64_t begin = std::min(n, shard_ * dp_.rank()), end = std::min(n, begin + shard_);
  add_scaled(storage_, main_.as<std::uint16_t>() + begin, reduced, scale, nullptr, end - begin);
  figures_.bytes = dp_.size() * shard_ * static_cast<std::int64_t>(sizeof(std::uint16_t));
  figures_.buckets = 1;
}

void StorageMainGradients::finish(double local_scale) {
  const double backward_end = comm_clock_seconds();
  figures_.cpu_at_backward_end_s = process_cpu_seconds();
  SB_CHECK(step_open_, "16-bit main gradients: backward reported no gradients this step");
  const auto n = static_cast<std::int64_t>(gradients_.size());
  SB_CHECK(reported_elements_ == micro_batches_ * n,
           "16-bit main gradients: {} gradients reported this step, {} micro-batches of {} expected",
           reported_elements_, micro_batches_, n);
  pages_.give_back_consumed();  // every range taken for the last time (counted above)
  pages_.recharge();
  const auto scale = static_cast<float>(local_scale / dp_.size());
  std::uint16_t* main = main_.as<std::uint16_t>();
  if (reduces() && reduction_ == Reduction::scatter) {
    reduce_scatter(scale);
  } else if (reduces()) {
    SB_CHECK(buckets_.packed() == static_cast<std::int64_t>(gradients_.size()),
             "backward reported {} of the model's {} gradients to the all-reduce", buckets_.packed(),
             gradients_.size());
    const std::vector<std::pair<double, double>> intervals = buckets_.wait_all();
    for (const PackedBuckets::Piece& piece : buckets_.pieces())  // the mean back into place, rounded once
      add_scaled(storage_, main + piece.offset, packed_.as<std::uint16_t>() + piece.packed_at, scale, nullptr,
                 piece.count);
    figures_.bytes = buckets_.packed() * static_cast<std::int64_t>(sizeof(std::uint16_t));
    figures_.buckets = buckets_.bucket_count();
    figures_.in_flight_s = union_length(intervals, 1e300);
    figures_.hidden_s = union_length(intervals, backward_end);
  } else if (scale != 1.0f) {
    add_scaled(storage_, main, main, scale, nullptr, static_cast<std::int64_t>(gradients_.size()));
  }
  figures_.exposed_s = comm_clock_seconds() - backward_end;
  if (reduces() && reduction_ == Reduction::scatter) figures_.in_flight_s = figures_.exposed_s;
  buckets_.clear();
  reports_.clear();
  reported_elements_ = 0;
  step_open_ = false;
}

}  // namespace sb::train
