// SPDX-License-Identifier: Apache-2.0
// Bucketed, overlapped gradient all-reduce and ZeRO-1 sharding over a data-parallel communicator.
#include "train/data_parallel.hpp"

#include <algorithm>
#include <utility>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"
#include "core/device_memory.hpp"
#include "parallel/ring.hpp"

namespace sb::train {

namespace {

using parallel::comm_clock_seconds;
constexpr int kZeroTag = 900;

// Length of the union of [start, min(end, cut)] over the intervals (sorted by start).
double union_length(std::vector<std::pair<double, double>> intervals, double cut) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, open_start = 0, open_end = -1;
  for (auto [start, end] : intervals) {
    end = std::min(end, cut);
    if (end <= start) continue;
    if (start > open_end) {
      if (open_end > open_start) total += open_end - open_start;
      open_start = start;
      open_end = end;
    } else {
      open_end = std::max(open_end, end);
    }
  }
  if (open_end > open_start) total += open_end - open_start;
  return total;
}

}  // namespace

// ---- bucketed all-reduce -----------------------------------------------------------------

BucketedAllReduce::BucketedAllReduce(parallel::Communicator& dp, std::span<float> gradients,
                                     std::int64_t bucket_bytes, bool overlap, const std::string& algorithm,
                                     MemoryTracker& tracker, kernels::Backend backend)
    : dp_(dp),
      gradients_(gradients),
      kernels_(kernels::kernels_for(backend)),
      device_(kernels::memory_device(backend)),
      bucket_elements_(std::max<std::int64_t>(1, bucket_bytes / static_cast<std::int64_t>(sizeof(float)))),
      overlap_(overlap),
      ring_(algorithm == "ring"),
      packed_(tracker, MemoryCategory::comm, static_cast<std::int64_t>(gradients.size() * sizeof(float)),
              "dp all-reduce buckets", device_) {
  SB_USER_CHECK(bucket_bytes > 0, "strategy.bucket_mb must be positive");
  SB_USER_CHECK(algorithm == "ring" || algorithm == "mpi", "strategy.allreduce '{}' is not ring or mpi", algorithm);
  SB_USER_CHECK(!ring_ || device_ == Device::cpu,
                "strategy.allreduce ring adds in host memory; gradients on the GPU take strategy.allreduce: mpi");
}

void BucketedAllReduce::start_bucket(std::int64_t end) {
  Bucket bucket;
  bucket.begin = bucket_begin_;
  bucket.count = end - bucket_begin_;
  bucket.start_s = comm_clock_seconds();
  float* data = packed_.as<float>() + bucket.begin;
  constexpr int kRingTagBase = 1000;  // one tag per bucket in flight
  bucket.request = ring_ ? parallel::ring_iall_reduce(dp_, data, bucket.count,
                                                      kRingTagBase + static_cast<int>(buckets_.size()),
                                                      &figures_.bytes_sent)
                         : dp_.iall_reduce(data, bucket.count, parallel::DataType::f32, parallel::ReduceOp::sum);
  buckets_.push_back(std::move(bucket));
  bucket_begin_ = end;
}

void BucketedAllReduce::progress() {
  for (Bucket& bucket : buckets_)
    if (bucket.done_s < 0 && bucket.request.test()) bucket.done_s = comm_clock_seconds();
}

void BucketedAllReduce::ready(std::int64_t offset, std::int64_t count) {
  const double entered_s = comm_clock_seconds(), entered_cpu_s = process_cpu_seconds();
  if (cursor_ == 0) {  // the step's first range
    figures_.bytes_sent = ring_ ? 0 : -1;
    figures_.in_backward_s = figures_.cpu_in_backward_s = 0;
  }
  const auto total = static_cast<std::int64_t>(gradients_.size());
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= total && cursor_ + count <= total,
           "gradient range [{}, {}) outside the model's {} gradients (or reported twice)", offset, offset + count,
           total);
  copy_device_bytes(packed_.as<float>() + cursor_, device_, gradients_.data() + offset, device_,
                    static_cast<std::size_t>(count) * sizeof(float));
  pieces_.push_back({offset, count, cursor_});
  cursor_ += count;
  if (overlap_ && cursor_ - bucket_begin_ >= bucket_elements_) start_bucket(cursor_);
  progress();
  figures_.in_backward_s += comm_clock_seconds() - entered_s;
  figures_.cpu_in_backward_s += process_cpu_seconds() - entered_cpu_s;
}

void BucketedAllReduce::finish(double local_scale) {
  const double backward_end = comm_clock_seconds();
  figures_.cpu_at_backward_end_s = process_cpu_seconds();
  SB_CHECK(cursor_ == static_cast<std::int64_t>(gradients_.size()),
           "backward reported {} of the model's {} gradients to the all-reduce", cursor_, gradients_.size());
  if (overlap_) {
    if (bucket_begin_ < cursor_) start_bucket(cursor_);
  } else {
    while (bucket_begin_ < cursor_) start_bucket(std::min(cursor_, bucket_begin_ + bucket_elements_));
  }
  for (Bucket& bucket : buckets_) {
    bucket.request.wait();
    if (bucket.done_s < 0) bucket.done_s = comm_clock_seconds();
  }
  // The sums back into place, then one scale of the whole gradient: float(sum · scale), each
  // product rounded once from an exact double product, as the float multiply it replaces.
  const float scale = static_cast<float>(local_scale / dp_.size());
  const float* packed = packed_.as<float>();
  for (const Piece& piece : pieces_)
    copy_device_bytes(gradients_.data() + piece.offset, device_, packed + piece.packed_at, device_,
                      static_cast<std::size_t>(piece.count) * sizeof(float));
  if (scale != 1.0f) kernels_.scale_inplace(gradients_.data(), cursor_, static_cast<double>(scale));
  std::vector<std::pair<double, double>> intervals;
  for (const Bucket& bucket : buckets_) intervals.emplace_back(bucket.start_s, bucket.done_s);
  figures_.bytes = cursor_ * static_cast<std::int64_t>(sizeof(float));
  figures_.buckets = static_cast<int>(buckets_.size());
  figures_.in_flight_s = union_length(intervals, 1e300);
  figures_.hidden_s = union_length(intervals, backward_end);
  figures_.exposed_s = comm_clock_seconds() - backward_end;
  pieces_.clear();
  buckets_.clear();
  cursor_ = bucket_begin_ = 0;
}

// ---- ZeRO-1 --------------------------------------------------------------------------------

ZeroOneSharding::ZeroOneSharding(parallel::Communicator& dp, std::span<float> parameters,
                                 std::span<float> gradients, MemoryTracker& tracker)
    : dp_(dp),
      parameters_(parameters),
      gradients_(gradients),
      shard_((static_cast<std::int64_t>(parameters.size()) + dp.size() - 1) / dp.size()),
      padded_(tracker, MemoryCategory::comm, shard_ * dp.size() * static_cast<std::int64_t>(sizeof(float)),
              "zero-1 padded exchange"),
      shard_grads_(tracker, MemoryCategory::grads, shard_ * static_cast<std::int64_t>(sizeof(float)),
                   "zero-1 gradient shard") {
  SB_CHECK(parameters.size() == gradients.size(), "zero-1: {} parameters but {} gradients", parameters.size(),
           gradients.size());
}

void ZeroOneSharding::finish(double local_scale) {
  const double t0 = comm_clock_seconds();
  figures_.cpu_at_backward_end_s = process_cpu_seconds();
  float* padded = padded_.as<float>();
  std::copy(gradients_.begin(), gradients_.end(), padded);  // the padding stays zero
  figures_.bytes_sent = 0;
  parallel::ring_ireduce_scatter(dp_, padded, shard_, kZeroTag, &figures_.bytes_sent).wait();
  const float scale = static_cast<float>(local_scale / dp_.size());
  const float* reduced = padded + shard_begin();
  float* shard = shard_grads_.as<float>();
  for (std::int64_t i = 0; i < shard_; ++i) shard[i] = reduced[i] * scale;
  figures_.bytes = shard_ * dp_.size() * static_cast<std::int64_t>(sizeof(float));
  figures_.buckets = 1;
  figures_.in_flight_s = figures_.exposed_s = comm_clock_seconds() - t0;
  figures_.hidden_s = 0;
}

std::vector<optim::ParameterSlice> ZeroOneSharding::shard_slices(
    const std::vector<optim::ParameterSlice>& model_slices) const {
  const std::int64_t begin = shard_begin();
  const std::int64_t end = std::min<std::int64_t>(begin + shard_, static_cast<std::int64_t>(parameters_.size()));
  std::vector<optim::ParameterSlice> shard;
  for (const optim::ParameterSlice& slice : model_slices) {
    const std::int64_t offset = slice.param - parameters_.data();
    SB_CHECK(offset >= 0 && offset + slice.numel <= static_cast<std::int64_t>(parameters_.size()),
             "zero-1: parameter '{}' is not inside the model's flat parameters", slice.name);
    const std::int64_t lo = std::max(offset, begin), hi = std::min(offset + slice.numel, end);
    if (lo >= hi) continue;
    shard.push_back({slice.name, parameters_.data() + lo, shard_grads_.as<float>() + (lo - begin), hi - lo,
                     slice.weight_decay, slice.replica});
  }
  return shard;
}

void ZeroOneSharding::gather_parameters() {
  const double t0 = comm_clock_seconds();
  float* padded = padded_.as<float>();
  const std::int64_t begin = shard_begin();
  const std::int64_t end = std::min<std::int64_t>(begin + shard_, static_cast<std::int64_t>(parameters_.size()));
  std::copy(parameters_.data() + begin, parameters_.data() + end, padded + begin);
  parallel::ring_iall_gather(dp_, padded, shard_, kZeroTag, &figures_.bytes_sent).wait();
  std::copy_n(padded, parameters_.size(), parameters_.data());
  figures_.exposed_s += comm_clock_seconds() - t0;
  figures_.in_flight_s += comm_clock_seconds() - t0;
}

}  // namespace sb::train
