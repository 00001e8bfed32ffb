// SPDX-License-Identifier: Apache-2.0
// Data-parallel gradient exchange: the bucketed all-reduce that overlaps backward (PyTorch DDP's
// scheme) and ZeRO-1/2's reduction to gradient shards with sharded optimizer slices and a
// parameter all-gather.
// Leaves out the data sharding (the tasks take their slice of each global batch) and the
// optimizer itself (optim/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "optim/parameter_slice.hpp"
#include "parallel/communicator.hpp"
#include "train/gradient_page_return.hpp"
#include "train/gradient_sync.hpp"

namespace sb::train {

// What one step's gradient exchange measured on this rank (seconds on comm_clock_seconds()).
struct GradientExchangeFigures {
  std::int64_t bytes = 0;  // payload all-reduced (or reduce-scattered) this step
  int buckets = 0;
  double in_flight_s = 0;  // union of the intervals during which some bucket was in flight
  double hidden_s = 0;     // the part of in_flight_s before backward ended (overlapped)
  double exposed_s = 0;    // from the end of backward until the gradients were ready to use
  // inside backward: packing ranges, starting buckets and progressing them (a ring's steps wait
  // for the peers there), time the rank's own compute does not include
  double in_backward_s = 0;
  double cpu_in_backward_s = 0;  // this process's CPU time in those same calls (a waiting ring polls)
  std::int64_t bytes_sent = -1;  // what this rank handed to the transport (ring algorithms); -1: MPI's own
  // process_cpu_seconds() when backward ended and the exposed wait began (-1: no exchange ran)
  double cpu_at_backward_end_s = -1;
};

// Length of the union of [start, min(end, cut)] over the intervals: the time some bucket was in
// flight (before `cut`).
double union_length(std::vector<std::pair<double, double>> intervals, double cut);

// The bookkeeping of a packed, bucketed all-reduce (BucketedAllReduce, and StorageMainGradients'
// 16-bit one): ranges packed one after another in the order backward reports them; buckets of
// consecutive packed elements started as they fill (with overlap) or all at the end; those in
// flight tested as each range arrives (MPI progresses non-blocking calls only inside MPI calls).
class PackedBuckets {
 public:
  struct Piece {
    std::int64_t offset, count, packed_at;
  };
  // start(begin, count, index): the reduction of packed elements [begin, begin + count), the
  // step's index-th bucket.
  using Start = std::function<parallel::Request(std::int64_t begin, std::int64_t count, int index)>;
  PackedBuckets(std::int64_t bucket_elements, bool overlap, Start start);
  std::int64_t packed() const { return cursor_; }  // where the next range is packed
  // The range [offset, offset + count) of the gradients is now packed at packed().
  void add(std::int64_t offset, std::int64_t count);
  // Starts what is not started, waits for every bucket; their [start, done] intervals.
  std::vector<std::pair<double, double>> wait_all();
  const std::vector<Piece>& pieces() const { return pieces_; }
  int bucket_count() const { return static_cast<int>(buckets_.size()); }
  void clear();  // the next step's first range is packed at 0

 private:
  struct Bucket {
    parallel::Request request;
    double start_s = 0, done_s = -1;
  };
  void start_bucket(std::int64_t end);
  void progress();

  std::int64_t bucket_elements_;
  bool overlap_;
  Start start_;
  std::vector<Piece> pieces_;
  std::vector<Bucket> buckets_;
  std::int64_t cursor_ = 0, bucket_begin_ = 0;
};

// Packs ranges into buckets of `bucket_bytes` in the order backward finishes them and starts
// each bucket's all-reduce (sum) as soon as it is full, testing the ones in flight whenever a
// new range arrives (MPI progresses non-blocking collectives only inside MPI calls); finish()
// starts the last bucket, waits for all and unpacks them scaled into the gradients. With
// overlap off every bucket starts in finish(), after backward: the baseline overlap is
// measured against. The comm buffer (one float per parameter) is charged to category comm.
// algorithm "ring" runs parallel/ring.hpp (bytes sent are counted, host memory only); "mpi" the
// communicator's own iall_reduce (MPI_Iallreduce; NCCL for device memory under the NCCL
// communicator). The gradients and the comm buffer live in `backend`'s memory: packing and
// unpacking are device copies and the averaging is the backend's scale_inplace.
class BucketedAllReduce final : public GradientSync {
 public:
  BucketedAllReduce(parallel::Communicator& dp, std::span<float> gradients, std::int64_t bucket_bytes,
                    bool overlap, const std::string& algorithm, MemoryTracker& tracker,
                    kernels::Backend backend = kernels::Backend::cpu);
  void ready(std::int64_t offset, std::int64_t count) override;
  void finish(double local_scale) override;
  const GradientExchangeFigures& last_step() const { return figures_; }

 private:
  parallel::Communicator& dp_;
  std::span<float> gradients_;
  const kernels::KernelTable& kernels_;
  Device device_;
  bool ring_;
  TrackedBuffer packed_;  // comm: (parameters) in ready order
  PackedBuckets buckets_;
  GradientExchangeFigures figures_;
};

// ZeRO stages 1, 2 and 3 over the data-parallel ranks: rank r owns the contiguous shard
// [r·shard, (r+1)·shard) of the flat parameters (shard = ceil(N / dp), the last one shorter);
// the optimizer steps only that shard (its state is 1/dp of the whole), and
// gather_parameters() all-gathers the updated shards into every rank's full parameters.
// Stage 1 reduce-scatters the whole gradient after backward (ring algorithms, bytes sent
// counted) and leaves the owned shard's mean in place in the model's gradients. Stage 2 keeps
// no full gradient: every micro-batch's backward hands over its ranges as it finishes them; each
// range is copied into a bucket of `bucket_bytes` (category comm) and its gradient pages given
// back as soon as every float on them is copied (`gradient_pages`: the model's gradients, a
// buffer charged by resident pages); a full bucket starts its all-reduce, overlapping backward
// (see start_open_bucket), and each piece's owner adds the piece's sum into its gradient shard
// (category grads, ceil(N / dp) floats). Two buckets at most are in flight (a third waits for them). Stage 3
// reduces gradients as stage 2 and also keeps the parameters sharded: the shard lives here
// (category params) and the optimizer steps it; the model gathers each unit's parameters from
// the shards as it needs them (Zero3UnitGather).
// Mixed precision under stages 1 and 2: the model's 16-bit weights (the kernels' copy, flat order
// as the fp32 master `parameters`) and the rounding of fp32 values into their type.
struct SixteenBitWeights {
  std::span<std::byte> bytes;  // (parameters) elements of the 16-bit type
  std::function<void(std::span<const float>, std::byte*)> narrow;
};

class ZeroSharding final : public GradientSync {
 public:
  // Stage 3: the parameter shard is charged to `parameter_shard_category` (params; optimizer
  // under mixed precision, where it is the fp32 master copy beside a 16-bit shard of the owner's).
  // Stages 1 and 2 with `weights` (mixed precision): `parameters` are the fp32 master weights,
  // of which this rank keeps only its shard, here (category optimizer), as ZeRO counts K = 12
  // bytes per parameter sharded; after each update the shard is rounded into its place in the
  // 16-bit weights and every rank's 16-bit shard all-gathered there (gather_parameters), so the
  // whole master is never held. The caller may give `parameters`' memory back after this.
  // Stages 2 and 3 with a 16-bit `gradient_type` (bf16 or f16: precision.main_grads storage):
  // each range is rounded into a 16-bit bucket, the buckets all-reduced in 16 bits (adding in
  // fp32, each partial sum rounded) and the owner's pieces added into a 16-bit gradient shard
  // (2 bytes a parameter over dp, ZeRO's count), which the optimizer widens chunk by chunk.
  ZeroSharding(int stage, parallel::Communicator& dp, std::span<float> parameters, std::span<float> gradients,
               TrackedBuffer* gradient_pages, std::int64_t bucket_bytes, MemoryTracker& tracker,
               MemoryCategory parameter_shard_category = MemoryCategory::params,
               std::optional<SixteenBitWeights> weights = std::nullopt,
               parallel::DataType gradient_type = parallel::DataType::f32);
  void ready(std::int64_t offset, std::int64_t count) override;
  bool reduces_every_micro_batch() const override { return stage_ >= 2; }
  void micro_batch_done() override;
  void finish(double local_scale) override;
  // The model's slices cut to this rank's shard, gradients pointing into the reduced shard.
  std::vector<optim::ParameterSlice> shard_slices(const std::vector<optim::ParameterSlice>& model_slices) const;
  // The reduced gradients of this rank's shard (what the optimizer reads): fp32, or (16-bit
  // gradient type) their bits.
  std::span<float> shard_gradients() const;
  std::span<std::uint16_t> shard_gradient_bits() const;
  parallel::DataType gradient_type() const { return gradient_type_; }
  // Stages 1 and 2: every rank's updated shard into every rank's parameters (with 16-bit
  // weights: into those, rounded). Stage 3: nothing (the model gathers each unit before it reads
  // it).
  void gather_parameters();
  // Stage 3, and stages 1 and 2 with 16-bit weights: this rank's parameters (fp32 master
  // weights), [shard_begin(), + size) of the flat ones, held here (the model's buffer holds only
  // gathered units, or nothing); what the optimizer steps.
  bool holds_parameter_shard() const { return stage_ == 3 || weights_.has_value(); }
  std::span<float> parameter_shard() const;
  // ... this rank's shard taken again from the model's flat parameters, once something wrote
  // all of them (a checkpoint's resume, fine-tuning's starting weights).
  void load_parameter_shard();
  std::int64_t shard_begin() const { return shard_ * dp_.rank(); }
  std::int64_t shard_size() const { return shard_; }
  const GradientExchangeFigures& last_step() const { return figures_; }

 private:
  struct Piece {  // gradients [begin, end), all owned by `owner`, at `at` in the bucket
    std::int64_t begin = 0, end = 0, at = 0;
    int owner = 0;
  };
  struct Bucket {
    TrackedBuffer staging;  // comm: the pieces' gradients, packed
    std::vector<Piece> pieces;
    parallel::Request request;  // the bucket's all-reduce, once started
    // elements the bucket takes (bucket_bytes, or one larger piece), whatever the size of the
    // reused staging: when a bucket starts must not depend on which earlier ones completed
    std::int64_t capacity = 0, used = 0;
    double start_s = -1;
  };
  void stage_piece(std::int64_t begin, std::int64_t end, int owner);
  void add_reduced_piece(const Bucket& bucket, const Piece& piece);
  void scale_shard_gradients(float scale);
  std::int64_t gradient_bytes() const { return gradient_type_ == parallel::DataType::f32 ? 4 : 2; }
  void start_open_bucket();
  void complete_buckets(bool wait);
  void gather_sixteen_bit_weights();
  std::int64_t owned_end() const;

  int stage_;
  parallel::Communicator& dp_;
  std::span<float> parameters_, gradients_;
  parallel::DataType gradient_type_;  // of the buckets and the gradient shard (stages 2 and 3)
  std::int64_t shard_, bucket_elements_;
  MemoryTracker& tracker_;
  std::optional<SixteenBitWeights> weights_;  // stages 1 and 2, mixed precision
  TrackedBuffer padded_;       // comm: (dp · shard) stage 1's gradients out and both stages' parameters in
  TrackedBuffer shard_grads_;  // grads: (shard) stage 2's and 3's reduced gradients, of gradient_type_
  TrackedBuffer parameter_shard_;  // params or optimizer: (shard) stage 3's parameters, or the master's
  std::vector<Bucket> buckets_;         // stage 2: the open one last, then those in flight
  std::vector<TrackedBuffer> spare_;    // stage 2: staging buffers of finished buckets, reused
  std::optional<GradientPageReturn> pages_;  // stages 2 and 3: the model's gradients, given back as copied
  bool step_open_ = false;
  std::vector<std::pair<double, double>> in_flight_;
  GradientExchangeFigures figures_;
};

}  // namespace sb::train
