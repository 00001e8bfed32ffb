// SPDX-License-Identifier: Apache-2.0
// Bucketed, overlapped gradient all-reduce and ZeRO-1/2 sharding over a data-parallel communicator.
#include "train/data_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"
#include "core/device_memory.hpp"
#include "parallel/ring.hpp"
#include "parallel/zero_shard.hpp"
#include "train/sixteen_bit_arrays.hpp"

namespace sb::train {

namespace {

using parallel::comm_clock_seconds;
constexpr int kZeroTag = 900;
constexpr int kZeroTwoBucketsInFlight = 2;

}  // namespace

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

// ---- the buckets of a packed all-reduce ---------------------------------------------------

PackedBuckets::PackedBuckets(std::int64_t bucket_elements, bool overlap, Start start)
    : bucket_elements_(std::max<std::int64_t>(1, bucket_elements)), overlap_(overlap), start_(std::move(start)) {}

void PackedBuckets::start_bucket(std::int64_t end) {
  Bucket bucket;
  bucket.start_s = comm_clock_seconds();
  bucket.request = start_(bucket_begin_, end - bucket_begin_, static_cast<int>(buckets_.size()));
  buckets_.push_back(std::move(bucket));
  bucket_begin_ = end;
}

void PackedBuckets::progress() {
  for (Bucket& bucket : buckets_)
    if (bucket.done_s < 0 && bucket.request.test()) bucket.done_s = comm_clock_seconds();
}

void PackedBuckets::add(std::int64_t offset, std::int64_t count) {
  pieces_.push_back({offset, count, cursor_});
  cursor_ += count;
  if (overlap_ && cursor_ - bucket_begin_ >= bucket_elements_) start_bucket(cursor_);
  progress();
}

std::vector<std::pair<double, double>> PackedBuckets::wait_all() {
  if (overlap_) {
    if (bucket_begin_ < cursor_) start_bucket(cursor_);
  } else {
    while (bucket_begin_ < cursor_) start_bucket(std::min(cursor_, bucket_begin_ + bucket_elements_));
  }
  std::vector<std::pair<double, double>> intervals;
  for (Bucket& bucket : buckets_) {
    bucket.request.wait();
    if (bucket.done_s < 0) bucket.done_s = comm_clock_seconds();
    intervals.emplace_back(bucket.start_s, bucket.done_s);
  }
  return intervals;
}

void PackedBuckets::clear() {
  pieces_.clear();
  buckets_.clear();
  cursor_ = bucket_begin_ = 0;
}

// ---- bucketed all-reduce -----------------------------------------------------------------

BucketedAllReduce::BucketedAllReduce(parallel::Communicator& dp, std::span<float> gradients,
                                     std::int64_t bucket_bytes, bool overlap, const std::string& algorithm,
                                     MemoryTracker& tracker, kernels::Backend backend)
    : dp_(dp),
      gradients_(gradients),
      kernels_(kernels::kernels_for(backend)),
      device_(kernels::memory_device(backend)),
      ring_(algorithm == "ring"),
      packed_(tracker, MemoryCategory::comm, static_cast<std::int64_t>(gradients.size() * sizeof(float)),
              "dp all-reduce buckets", device_),
      buckets_(bucket_bytes / static_cast<std::int64_t>(sizeof(float)), overlap,
               [this](std::int64_t begin, std::int64_t count, int index) {
                 float* data = packed_.as<float>() + begin;
                 constexpr int kRingTagBase = 1000;  // one tag per bucket in flight
                 return ring_ ? parallel::ring_iall_reduce(dp_, data, count, kRingTagBase + index,
                                                           &figures_.bytes_sent)
                              : dp_.iall_reduce(data, count, parallel::DataType::f32, parallel::ReduceOp::sum);
               }) {
  SB_USER_CHECK(bucket_bytes > 0, "strategy.bucket_mb must be positive");
  SB_USER_CHECK(algorithm == "ring" || algorithm == "mpi", "strategy.allreduce '{}' is not ring or mpi", algorithm);
  SB_USER_CHECK(!ring_ || device_ == Device::cpu,
                "strategy.allreduce ring adds in host memory; gradients on the GPU take strategy.allreduce: mpi");
}

void BucketedAllReduce::ready(std::int64_t offset, std::int64_t count) {
  const double entered_s = comm_clock_seconds(), entered_cpu_s = process_cpu_seconds();
  if (buckets_.packed() == 0) {  // the step's first range
    figures_.bytes_sent = ring_ ? 0 : -1;
    figures_.in_backward_s = figures_.cpu_in_backward_s = 0;
  }
  const auto total = static_cast<std::int64_t>(gradients_.size());
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= total && buckets_.packed() + count <= total,
           "gradient range [{}, {}) outside the model's {} gradients (or reported twice)", offset, offset + count,
           total);
  copy_device_bytes(packed_.as<float>() + buckets_.packed(), device_, gradients_.data() + offset, device_,
                    static_cast<std::size_t>(count) * sizeof(float));
  buckets_.add(offset, count);
  figures_.in_backward_s += comm_clock_seconds() - entered_s;
  figures_.cpu_in_backward_s += process_cpu_seconds() - entered_cpu_s;
}

void BucketedAllReduce::finish(double local_scale) {
  const double backward_end = comm_clock_seconds();
  figures_.cpu_at_backward_end_s = process_cpu_seconds();
  const std::int64_t packed = buckets_.packed();
  SB_CHECK(packed == static_cast<std::int64_t>(gradients_.size()),
           "backward reported {} of the model's {} gradients to the all-reduce", packed, gradients_.size());
  const std::vector<std::pair<double, double>> intervals = buckets_.wait_all();
  // The sums back into place, then one scale of the whole gradient: float(sum · scale), each
  // product rounded once from an exact double product, as the float multiply it replaces.
  const float scale = static_cast<float>(local_scale / dp_.size());
  const float* sums = packed_.as<float>();
  for (const PackedBuckets::Piece& piece : buckets_.pieces())
    copy_device_bytes(gradients_.data() + piece.offset, device_, sums + piece.packed_at, device_,
                      static_cast<std::size_t>(piece.count) * sizeof(float));
  if (scale != 1.0f) kernels_.scale_inplace(gradients_.data(), packed, static_cast<double>(scale));
  figures_.bytes = packed * static_cast<std::int64_t>(sizeof(float));
  figures_.buckets = buckets_.bucket_count();
  figures_.in_flight_s = union_length(intervals, 1e300);
  figures_.hidden_s = union_length(intervals, backward_end);
  figures_.exposed_s = comm_clock_seconds() - backward_end;
  buckets_.clear();
}

// ---- ZeRO-1 and ZeRO-2 ------------------------------------------------------------------------

ZeroSharding::ZeroSharding(int stage, parallel::Communicator& dp, std::span<float> parameters,
                           std::span<float> gradients, TrackedBuffer* gradient_pages, std::int64_t bucket_bytes,
                           MemoryTracker& tracker, MemoryCategory parameter_shard_category,
                           std::optional<SixteenBitWeights> weights, parallel::DataType gradient_type)
    : stage_(stage),
      dp_(dp),
      parameters_(parameters),
      gradients_(gradients),
      gradient_type_(gradient_type),
      shard_(parallel::zero_shard_size(static_cast<std::int64_t>(parameters.size()), dp.size())),
      bucket_elements_(std::max<std::int64_t>(1, bucket_bytes / gradient_bytes())),
      tracker_(tracker),
      weights_(std::move(weights)),
      // stage 1's gradients out, and the fp32 parameters in where they are gathered in fp32
      padded_(stage == 1 || (stage == 2 && !weights_) ? TrackedBuffer(tracker, MemoryCategory::comm,
                                         shard_ * dp.size() * static_cast<std::int64_t>(sizeof(float)),
                                         fmt::format("zero-{} padded exchange", stage))
                         : TrackedBuffer()) {
  SB_CHECK(stage >= 1 && stage <= 3, "ZeRO stage {} is not sharded here", stage);
  SB_CHECK(parameters.size() == gradients.size(), "zero-{}: {} parameters but {} gradients", stage,
           parameters.size(), gradients.size());
  SB_CHECK(!weights_ || (stage <= 2 && weights_->bytes.size() == 2 * parameters.size()),
           "zero-{}: 16-bit weights of {} bytes for {} parameters", stage, weights_ ? weights_->bytes.size() : 0,
           parameters.size());
  SB_CHECK(gradient_type == parallel::DataType::f32 ||
               (stage >= 2 && (gradient_type == parallel::DataType::bf16 || gradient_type == parallel::DataType::f16)),
           "zero-{}: gradient shards of type {}", stage, parallel::to_string(gradient_type));
  if (stage_ >= 2) {
    pages_.emplace(gradient_pages, gradients, stage == 2 ? "zero-2" : "zero-3", GradientPageReturn::Return::when_asked);
    shard_grads_ = TrackedBuffer(tracker, MemoryCategory::grads, shard_ * gradient_bytes(),
                                 fmt::format("zero-{} gradient shard ({})", stage, parallel::to_string(gradient_type)));
  }
  if (!holds_parameter_shard()) return;
  parameter_shard_ = TrackedBuffer(tracker, weights_ ? MemoryCategory::optimizer : parameter_shard_category,
                                   shard_ * static_cast<std::int64_t>(sizeof(float)),
                                   stage == 3 ? "zero-3 fp32 parameter shard"
                                              : fmt::format("zero-{} fp32 master weight shard", stage));
  load_parameter_shard();
}

void ZeroSharding::load_parameter_shard() {
  SB_CHECK(holds_parameter_shard(), "zero-{}: no parameter shard of its own in fp32", stage_);
  if (shard_begin() < owned_end())
    std::copy(parameters_.data() + shard_begin(), parameters_.data() + owned_end(), parameter_shard_.as<float>());
}

std::span<float> ZeroSharding::parameter_shard() const {
  SB_CHECK(holds_parameter_shard(), "zero-{}: no parameter shard of its own in fp32", stage_);
  return {parameter_shard_.as<float>(), static_cast<std::size_t>(std::max<std::int64_t>(0, owned_end() - shard_begin()))};
}

std::int64_t ZeroSharding::owned_end() const {
  return std::min<std::int64_t>(shard_begin() + shard_, static_cast<std::int64_t>(parameters_.size()));
}

std::span<std::uint16_t> ZeroSharding::shard_gradient_bits() const {
  SB_CHECK(gradient_type_ != parallel::DataType::f32, "zero-{}: the gradient shard is fp32", stage_);
  return {shard_grads_.as<std::uint16_t>(), static_cast<std::size_t>(std::max<std::int64_t>(0, owned_end() - shard_begin()))};
}

std::span<float> ZeroSharding::shard_gradients() const {
  SB_CHECK(gradient_type_ == parallel::DataType::f32, "zero-{}: the gradient shard is {}", stage_,
           parallel::to_string(gradient_type_));
  const std::int64_t count = std::max<std::int64_t>(0, owned_end() - shard_begin());
  float* data = stage_ >= 2 ? shard_grads_.as<float>() : gradients_.data() + std::min(shard_begin(), owned_end());
  return {data, static_cast<std::size_t>(count)};
}

// Stage 2: gradients [begin, end) (one owner's) copied into the open bucket, opening one as
// needed; a bucket holding bucket_bytes starts.
void ZeroSharding::stage_piece(std::int64_t begin, std::int64_t end, int owner) {
  const std::int64_t count = end - begin;
  if (buckets_.empty() || buckets_.back().start_s >= 0 || buckets_.back().used + count > buckets_.back().capacity) {
    if (!buckets_.empty() && buckets_.back().start_s < 0) start_open_bucket();
    // at most kZeroTwoBucketsInFlight buckets' staging held: double buffering, as DeepSpeed's
    if (static_cast<int>(buckets_.size()) >= kZeroTwoBucketsInFlight) complete_buckets(true);
    Bucket bucket;
    // no larger than the model's gradients: a bucket never holds more of them (a small model's
    // staging is its gradients' size, not strategy.bucket_mb's)
    const std::int64_t elements = std::max(std::min(bucket_elements_, static_cast<std::int64_t>(gradients_.size())), count);
    bucket.capacity = elements;
    const std::int64_t bytes = gradient_bytes() * elements;
    const auto spare = std::find_if(spare_.begin(), spare_.end(), [&](const TrackedBuffer& b) { return b.bytes() >= bytes; });
    if (spare != spare_.end()) {
      bucket.staging = std::move(*spare);
      spare_.erase(spare);
    } else {
      bucket.staging = TrackedBuffer(tracker_, MemoryCategory::comm, bytes, "zero-2 gradient bucket");
    }
    buckets_.push_back(std::move(bucket));
  }
  Bucket& bucket = buckets_.back();
  if (gradient_type_ == parallel::DataType::f32)
    std::copy_n(gradients_.data() + begin, count, bucket.staging.as<float>() + bucket.used);
  else  // rounded into the bucket
    add_scaled(gradient_type_, bucket.staging.as<std::uint16_t>() + bucket.used, nullptr, 1.0f,
               gradients_.data() + begin, count);
  bucket.pieces.push_back({begin, end, bucket.used, owner});
  bucket.used += count;
  if (bucket.used >= bucket_elements_) start_open_bucket();
}

// Stages 2 and 3: the open bucket's reduction, one all-reduce of its packed pieces (the same
// pieces at the same places on every rank); each piece's owner keeps its sum. An all-reduce,
// not a reduction to each piece's owner: Open MPI 4.1.4's libnbc hung with MPI_Ireduce in
// flight beside the blocking all-reduces of synchronised BatchNorm, so a bucket moves 2(n-1)/n
// of its bytes per rank where reductions to the owners would move (n-1)/n. (That hang may have
// been the ranks' different order of calls that Bucket::capacity removed; not tried again.)
// Every rank starts the same reductions in the same order, between the same other calls on
// `dp_` (tests/parallel/test_collective_order.cpp): nothing here depends on completions.
void ZeroSharding::start_open_bucket() {
  if (buckets_.empty() || buckets_.back().start_s >= 0) return;
  Bucket& bucket = buckets_.back();
  pages_->give_back_held();  // the gradients staged so far are copied out: their pages go back
  bucket.start_s = comm_clock_seconds();
  bucket.request = dp_.iall_reduce(bucket.staging.data(), bucket.used, gradient_type_, parallel::ReduceOp::sum);
  figures_.bytes += bucket.used * gradient_bytes();
  ++figures_.buckets;
}

// A reduced piece this rank owns added into its gradient shard (16 bits: in fp32, rounded once).
void ZeroSharding::add_reduced_piece(const Bucket& bucket, const Piece& piece) {
  const std::int64_t at = piece.begin - shard_begin(), count = piece.end - piece.begin;
  if (gradient_type_ == parallel::DataType::f32) {
    const float* reduced = bucket.staging.as<float>() + piece.at;
    float* mine = shard_grads_.as<float>() + at;
    for (std::int64_t i = 0; i < count; ++i) mine[i] += reduced[i];
  } else {
    const auto n = static_cast<std::size_t>(count);
    add_rounded(gradient_type_, {shard_grads_.as<std::uint16_t>() + at, n}, {bucket.staging.as<std::uint16_t>() + piece.at, n});
  }
}

// The shard's gradients times `scale` (16 bits: each rounded once).
void ZeroSharding::scale_shard_gradients(float scale) {
  const std::int64_t count = owned_end() - shard_begin();
  if (gradient_type_ == parallel::DataType::f32) {
    float* shard = shard_grads_.as<float>();
    for (std::int64_t i = 0; i < count; ++i) shard[i] *= scale;
  } else if (scale != 1.0f && count > 0) {
    std::uint16_t* shard = shard_grads_.as<std::uint16_t>();
    add_scaled(gradient_type_, shard, shard, scale, nullptr, count);
  }
}

// Stage 2: each finished bucket's pieces that this rank owns added into its shard; the
// bucket's staging kept for reuse.
void ZeroSharding::complete_buckets(bool wait) {
  std::erase_if(buckets_, [&](Bucket& bucket) {
    if (bucket.start_s < 0) return false;
    if (wait)
      bucket.request.wait();
    else if (!bucket.request.test())
      return false;
    in_flight_.emplace_back(bucket.start_s, comm_clock_seconds());
    for (const Piece& piece : bucket.pieces)
      if (piece.owner == dp_.rank()) add_reduced_piece(bucket, piece);
    spare_.push_back(std::move(bucket.staging));
    return true;
  });
}

void ZeroSharding::ready(std::int64_t offset, std::int64_t count) {
  if (stage_ == 1) return;  // ZeRO-1 exchanges after backward
  const double entered_s = comm_clock_seconds(), entered_cpu_s = process_cpu_seconds();
  if (!step_open_) {  // the step's first range: the shard starts from zero
    std::fill_n(shard_grads_.as<std::byte>(), shard_grads_.bytes(), std::byte{0});  // +0 in every type
    figures_ = {};
    in_flight_.clear();
    step_open_ = true;
  }
  SB_CHECK(offset >= 0 && count >= 0 && offset + count <= static_cast<std::int64_t>(gradients_.size()),
           "gradient range [{}, {}) outside the model's {} gradients", offset, offset + count, gradients_.size());
  // what backward wrote since the last range: the peak (the pages given back below are
  // charged off by the next range's call, or at the end of the micro-batch)
  pages_->recharge();
  for (std::int64_t begin = offset; begin < offset + count;) {
    const int owner = static_cast<int>(begin / shard_);
    const std::int64_t end = std::min(offset + count, (owner + 1) * shard_);
    stage_piece(begin, end, owner);
    begin = end;
  }
  pages_->consumed(offset, offset + count);
  // every staged gradient in a bucket whose reduction started: their pages go back now (else
  // they go when the open bucket starts, at the latest in micro_batch_done or finish)
  if (!buckets_.empty() && buckets_.back().start_s >= 0) pages_->give_back_held();
  complete_buckets(false);
  figures_.in_backward_s += comm_clock_seconds() - entered_s;
  figures_.cpu_in_backward_s += process_cpu_seconds() - entered_cpu_s;
}

void ZeroSharding::micro_batch_done() {
  if (stage_ == 1) return;
  const double entered_s = comm_clock_seconds(), entered_cpu_s = process_cpu_seconds();
  start_open_bucket();  // gives back the held pages before the next backward writes them again
  complete_buckets(true);
  pages_->recharge();
  figures_.in_backward_s += comm_clock_seconds() - entered_s;
  figures_.cpu_in_backward_s += process_cpu_seconds() - entered_cpu_s;
}

void ZeroSharding::finish(double local_scale) {
  const double t0 = comm_clock_seconds();
  figures_.cpu_at_backward_end_s = process_cpu_seconds();
  const float scale = static_cast<float>(local_scale / dp_.size());
  if (stage_ >= 2) {
    SB_CHECK(step_open_, "zero-{}: backward reported no gradients this step", stage_);
    start_open_bucket();
    complete_buckets(true);
    pages_->recharge();
    SB_CHECK(pages_->all_given_back(),
             "zero-{}: backward did not report every gradient of the model", stage_);
    scale_shard_gradients(scale);
    step_open_ = false;
    figures_.in_flight_s = union_length(in_flight_, 1e300);
    figures_.hidden_s = union_length(in_flight_, t0);
    figures_.exposed_s = comm_clock_seconds() - t0;
    return;
  }
  float* padded = padded_.as<float>();
  std::copy(gradients_.begin(), gradients_.end(), padded);  // the padding stays zero
  figures_.bytes_sent = 0;
  parallel::ring_ireduce_scatter(dp_, padded, shard_, kZeroTag, &figures_.bytes_sent).wait();
  const float* reduced = padded + shard_begin();
  const std::span<float> shard = shard_gradients();
  for (std::size_t i = 0; i < shard.size(); ++i) shard[i] = reduced[i] * scale;
  figures_.bytes = shard_ * dp_.size() * static_cast<std::int64_t>(sizeof(float));
  figures_.buckets = 1;
  figures_.in_flight_s = figures_.exposed_s = comm_clock_seconds() - t0;
  figures_.hidden_s = 0;
}

std::vector<optim::ParameterSlice> ZeroSharding::shard_slices(
    const std::vector<optim::ParameterSlice>& model_slices) const {
  const std::int64_t begin = shard_begin(), end = owned_end();
  const bool sixteen_bit = gradient_type_ != parallel::DataType::f32;
  float* shard_grads = sixteen_bit ? nullptr : shard_gradients().data();
  const std::uint16_t* shard_bits = sixteen_bit ? shard_gradient_bits().data() : nullptr;
  const optim::GradientStorage storage = gradient_type_ == parallel::DataType::bf16   ? optim::GradientStorage::bf16
                                         : gradient_type_ == parallel::DataType::f16 ? optim::GradientStorage::fp16
                                                                                     : optim::GradientStorage::fp32;
  std::vector<optim::ParameterSlice> shard;
  for (const optim::ParameterSlice& slice : model_slices) {
    const std::int64_t offset = slice.param - parameters_.data();
    SB_CHECK(offset >= 0 && offset + slice.numel <= static_cast<std::int64_t>(parameters_.size()),
             "zero-{}: parameter '{}' is not inside the model's flat parameters", stage_, slice.name);
    const std::int64_t lo = std::max(offset, begin), hi = std::min(offset + slice.numel, end);
    if (lo >= hi) continue;
    float* param = holds_parameter_shard() ? parameter_shard_.as<float>() + (lo - begin) : parameters_.data() + lo;
    optim::ParameterSlice cut{slice.name, param, sixteen_bit ? nullptr : shard_grads + (lo - begin), hi - lo,
                              slice.weight_decay, slice.replica};
    if (sixteen_bit) {
      cut.grad_bits = shard_bits + (lo - begin);
      cut.grad_storage = storage;
    }
    shard.push_back(std::move(cut));
  }
  return shard;
}

void ZeroSharding::gather_parameters() {
  if (stage_ == 3) return;  // the model gathers each unit as it needs it (zero3_unit_gather.hpp)
  const double t0 = comm_clock_seconds();
  if (weights_) {
    gather_sixteen_bit_weights();
    figures_.exposed_s += comm_clock_seconds() - t0;
    figures_.in_flight_s += comm_clock_seconds() - t0;
    return;
  }
  float* padded = padded_.as<float>();
  const std::int64_t begin = shard_begin(), end = owned_end();
  if (begin < end) std::copy(parameters_.data() + begin, parameters_.data() + end, padded + begin);
  // bytes sent are counted where the whole exchange runs the ring (stage 1's reduce-scatter)
  parallel::ring_iall_gather(dp_, padded, shard_, kZeroTag, stage_ == 1 ? &figures_.bytes_sent : nullptr).wait();
  std::copy_n(padded, parameters_.size(), parameters_.data());
  figures_.exposed_s += comm_clock_seconds() - t0;
  figures_.in_flight_s += comm_clock_seconds() - t0;
}

// Mixed precision: this rank's updated master shard rounded into its place in the 16-bit
// weights, then one all-gatherv in place there (rank q's piece is [q·shard, min((q+1)·shard,
// N)), the last one shorter): 2 bytes a parameter move where fp32 would move 4, and no rank
// holds the whole master.
void ZeroSharding::gather_sixteen_bit_weights() {
  constexpr std::int64_t kElementBytes = 2;
  std::byte* weights = weights_->bytes.data();
  const auto total = static_cast<std::int64_t>(parameters_.size());
  if (shard_begin() < owned_end()) weights_->narrow(parameter_shard(), weights + shard_begin() * kElementBytes);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(dp_.size()));
  for (int q = 0; q < dp_.size(); ++q) {
    const std::int64_t begin = std::min<std::int64_t>(q * shard_, total);
    counts[static_cast<std::size_t>(q)] = (std::min(begin + shard_, total) - begin) * kElementBytes;
  }
  if (dp_.size() > 1) dp_.iall_gatherv_in_place(weights, counts, parallel::DataType::u8).wait();
}

}  // namespace sb::train
