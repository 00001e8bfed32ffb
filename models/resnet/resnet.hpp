// SPDX-License-Identifier: Apache-2.0
// resnet-mini, llm.c style: parameters, gradients, BatchNorm running statistics, activations
// each in one tracked allocation with named views. A model instance may hold a contiguous range
// of the network's units (a pipeline stage: resnet_partition.hpp) and several independent
// activation sets ("slots", one per micro-batch in flight). Leaves out bottleneck blocks, the
// max-pool stem (resnet-18/50 are cost-model specs only) and communication itself. Under mixed
// precision (ResnetModelT<bf16>, <fp16>) weights, activations and activation gradients are
// 16-bit (kernels/storage_kernels.hpp); fp32 master weights, parameter gradients, BatchNorm batch
// and running statistics and the losses stay float. Further: data parallelism plugs in through two hooks (a BatchNorm sum reducer, a
// gradient-ready callback) and pipeline parallelism through plain float buffers (a stage's input
// and output activation and their gradients), so models never depend on MPI.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/recompute.hpp"
#include "core/tensor.hpp"
#include "core/unit_parameter_gather.hpp"
#include "kernels/kernels.hpp"
#include "kernels/storage_kernels.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "models/resnet/soft_targets.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::resnet {

// PyTorch's BatchNorm2d defaults.
inline constexpr double kBatchNormMomentum = 0.1;
inline constexpr double kBatchNormEps = 1e-5;

// ---- parameters (and, mirrored, gradients) ------------------------------------------------
template <class S>
struct BatchNormTensorsT {
  S* weight;  // (C) γ
  S* bias;    // (C) β
};
using BatchNormTensors = BatchNormTensorsT<float>;

// One BasicBlock: conv1 (stride) → bn1 → ReLU → conv2 → bn2, + shortcut, ReLU.
template <class S>
struct BlockTensorsT {
  S* conv1;                          // (OC, IC, 3, 3)
  BatchNormTensorsT<S> bn1;          // (OC)
  S* conv2;                          // (OC, OC, 3, 3)
  BatchNormTensorsT<S> bn2;          // (OC)
  S* shortcut_conv;                  // (OC, IC, 1, 1); nullptr for the identity shortcut
  BatchNormTensorsT<S> shortcut_bn;  // (OC); nullptr for the identity shortcut
};
using BlockTensors = BlockTensorsT<float>;

// A partition's model points only the views of its own units; the others stay nullptr.
template <class S>
struct ParameterTensorsT {
  S* stem_conv;                          // (16, 1, 3, 3)
  BatchNormTensorsT<S> stem_bn;          // (16)
  std::vector<BlockTensorsT<S>> blocks;  // stage1.0, stage1.1, stage2.0, ...
  S* fc_weight;                          // (classes, 64)
  S* fc_bias;                            // (classes)
};
using ParameterTensors = ParameterTensorsT<float>;

enum class ParameterInit {
  kaiming_normal_fan_out,  // normal(0, sqrt(2 / (OC·KH·KW))): torchvision's ResNet convs
  linear_uniform,          // uniform(±1/sqrt(fan_in)): nn.Linear's default, weight and bias
  ones,
  zeros,
};

// Name (PyTorch's state_dict key in make_golden.py), shape and initialisation of each
// parameter tensor, in storage order.
struct ParameterSpec {
  std::string name;  // "stem.conv.weight", "stage2.0.shortcut.bn.bias", "fc.weight"
  Shape shape;
  ParameterInit init;
  double scale;  // the normal's std or the uniform's bound; unused by ones and zeros
};
std::vector<ParameterSpec> resnet_parameter_specs(const ResnetConfig& config);

// One parameter tensor with its gradient, for optimizers, checkpoints and tests.
struct ParameterView {
  std::string name;
  float* param;
  float* grad;
  std::int64_t numel;
};

// ---- BatchNorm running statistics: model state, not trained ---------------------------------
struct RunningStatistics {
  float* mean;  // (C)
  float* var;   // (C) unbiased batch variance, averaged with momentum 0.1
};
struct BlockRunningStatistics {
  RunningStatistics bn1, bn2, shortcut_bn;  // shortcut_bn: nullptr for the identity
};
struct RunningStatisticsTensors {
  RunningStatistics stem_bn;
  std::vector<BlockRunningStatistics> blocks;
};

// One running-statistics tensor: "stem.bn.running_mean", "stage1.0.bn2.running_var", ...
struct StatisticsView {
  std::string name;
  float* values;
  std::int64_t numel;
};

// ---- activations ------------------------------------------------------------------------
// Batch statistics of one BatchNorm in the last training forward, kept for its backward.
struct BatchStatistics {
  float* mean;  // (C)
  float* rstd;  // (C) 1 / sqrt(biased variance + eps)
};

// (N, OC, OH, OW) tensors of one block in the layout of the current N.
template <class S>
struct BlockActivationsT {
  S* conv1;                      // bn1's input
  BatchStatistics bn1;
  S* relu1;                      // conv2's input
  S* conv2;                      // bn2's input
  BatchStatistics bn2;
  S* shortcut_conv;              // shortcut bn's input; nullptr for the identity
  BatchStatistics shortcut_bn;
  S* out;                        // relu(bn2 + shortcut): the next block's input
};

// What the backward reads, for N images; a smaller batch packs into the front. One such set
// per activation slot, holding the views of the model's own units (the others stay nullptr).
template <class S>
struct ActivationTensorsT {
  S* input;            // (N, C, H, W) a copy of the first unit's input: the images (N, 1, 28, 28)
                       // for the stem, the previous stage's output otherwise
  S* stem_conv;        // (N, 16, 28, 28)
  BatchStatistics stem_bn;
  S* stem_relu;        // (N, 16, 28, 28) stage1.0's input
  std::vector<BlockActivationsT<S>> blocks;
  S* pooled;           // (N, 64)
  S* logits;           // (N, classes)
  S* probs;            // (N, classes)
  float* losses;       // (N)
};
using ActivationTensors = ActivationTensorsT<float>;

// Backward scratch, each (N, max C·H·W) after the head's: the gradients of a block's output
// and input (swapped block by block) and of one block's convolution outputs, reused by every
// block (dconv1 also by the stem). The ReLU masks and the residual split are fused into the
// BatchNorm backward, which overwrites dconv*: only dblock_in and drelu1 (sums of
// convolution backwards) are zeroed each block. Shared by every slot: one backward at a time.
// A partition without the head has no dlosses, dlogits, dpooled (nullptr).
template <class S>
struct ActivationGradientsT {
  float* dlosses;           // (N) 1/N: the loss is the mean
  S* dlogits;               // (N, classes)
  S* dpooled;               // (N, 64)
  S* dblock_out;    
  S* dblock_in;    
  S* dconv2;    
  S* drelu1;    
  S* dconv1;    
  S* dshortcut_conv;    
};
using ActivationGradients = ActivationGradientsT<float>;

// Under interleaving: where one model chunk's weights (S), fp32 master weights (16-bit S only),
// gradients and BatchNorm running statistics live, inside buffers the caller holds for all its
// chunks (so that they form one flat span each). Null params: the model allocates its own.
template <class S>
struct ResnetParameterStorageT {
  S* params = nullptr;
  float* master = nullptr;
  float* grads = nullptr;
  float* statistics = nullptr;
};

// Parameters and running-statistics floats of the units [first, end) of a partition.
std::int64_t resnet_partition_parameter_count(const ResnetConfig& config, ResnetPartition partition);
// Elements of each of the partition's parameter tensors, in storage order (the optimizer's
// slices: ResnetModelT::parameter_slices).
std::vector<std::int64_t> resnet_partition_parameter_tensors(const ResnetConfig& config, ResnetPartition partition);
std::int64_t resnet_partition_statistics_count(const ResnetConfig& config, ResnetPartition partition);

// all_reduce_sum(values): replaces values by their sum over every data-parallel rank.
using BatchnormReducer = std::function<void(std::span<double>)>;
// (offset, count) in floats into gradients_flat(): that range is final for this backward().
using GradientReadyCallback = std::function<void(std::int64_t offset, std::int64_t count)>;

// Bytes of the forward activations (the input copy included, labels not) of `slots`
// activation sets for N images each, plus the one shortcut scratch tensor (N, max C·H·W)
// that every block of every slot reuses; and of the backward scratch for N images; storage S
// (float32 by default; BatchNorm statistics and losses are float in every precision).
// Each slot more adds resnet_slot_activation_bytes: one micro-batch's activation set.
// Under full recomputation (recompute full) a slot keeps each block's output and BatchNorm
// statistics, and one recompute scratch, held once, holds the largest block's other tensors.
// Recompute selective is refused: it drops attention probabilities, which a ResNet has none of.
template <class S = float>
std::int64_t resnet_activation_bytes(const ResnetConfig& config, std::int64_t N,
                                     ResnetPartition partition = {}, std::int64_t slots = 1,
                                     Recompute recompute = Recompute::none);
template <class S = float>
std::int64_t resnet_slot_activation_bytes(const ResnetConfig& config, std::int64_t N,
                                          ResnetPartition partition = {},
                                          Recompute recompute = Recompute::none);
template <class S = float>
std::int64_t resnet_activation_gradient_bytes(const ResnetConfig& config, std::int64_t N,
                                              ResnetPartition partition = {});

template <class S>
class ResnetModelT {
 public:
  // Allocates everything for batches up to max_batch, for the units of `partition` (the
  // whole network by default) and `activation_slots` independent activation sets; parameters
  // start at zero, running statistics at mean 0, variance 1. Throws UserError for a spec-only
  // config or a partition outside the network's units.
  // With a recorder every kernel call is logged there (kernels/kernel_recorder.hpp), in units
  // "stem", "block" (one per block) and "head"; a record_only recorder makes a model that
  // allocates nothing and runs no kernel or copy, whose training forward and backward only
  // record (losses NaN). recompute full: each block's forward runs again in its backward, from
  // the block's input and the BatchNorm statistics its forward kept (no second reduction or
  // running-statistics update), so the gradients are those of recompute none, bit for bit.
  // parameter_residency: the weights' buffer charged by resident pages (ZeRO-3, whose ranks
  // hold its shards and gather each unit: set_unit_parameter_gather). storage: a chunk's
  // parameters in the caller's buffers (interleaving; the residencies are then the caller's).
  ResnetModelT(const ResnetConfig& config, std::int64_t max_batch, kernels::Backend backend,
               MemoryTracker& tracker, ResnetPartition partition = {},
               std::int64_t activation_slots = 1, kernels::KernelRecorder* recorder = nullptr,
               Residency gradient_residency = Residency::allocated, Recompute recompute = Recompute::none,
               Residency master_residency = Residency::allocated,
               Residency parameter_residency = Residency::allocated, ResnetParameterStorageT<S> storage = {});

  // Kaiming normal (fan_out, ReLU gain) convs, BatchNorm weight 1 bias 0, nn.Linear's
  // uniform(±1/sqrt(64)) head; running statistics reset. Element i of parameter tensor k
  // (k counted over the whole network, whatever the partition) draws from
  // CounterRng(seed, k) at index i: independent of thread count and of the split.
  void init_weights(std::uint64_t seed);

  // Mixed precision: rounds the fp32 master weights into the 16-bit weights the kernels read;
  // after every change of parameters_flat(). Nothing to do in fp32, where the two are one, nor
  // under ZeRO-3 (set_unit_parameter_gather), where the 16-bit weights come from the gathers.
  void sync_storage_parameters();
  // The factor the loss gradient starts from (fp16 loss scaling); 1 by default.
  void set_loss_scale(double scale) { loss_scale_ = scale; }
  // Knowledge distillation (soft_targets.hpp): while set, a training or evaluation forward with
  // labels returns the mixed loss and backward() starts from its gradient; the teacher's logits
  // (N, classes) must match the next forward's batch. Default (null logits): cross-entropy.
  // fp32 storage only.
  void set_soft_targets(const SoftTargets& targets);

  // The whole network on slot 0: images (N, 1, 28, 28), labels (N) in [0, classes) or
  // nullptr; 1 <= N <= max_batch. training: BatchNorm uses batch statistics and updates the
  // running ones; else it uses the running statistics. Returns the mean cross-entropy, or NaN
  // without labels. Only a training forward with labels can be followed by backward().
  float forward(const float* images, const std::int32_t* labels, std::int64_t N, bool training) {
    return forward(0, images, labels, N, training);
  }
  void zero_grad();
  // Accumulates d(mean loss)/d(parameters) of the last forward into the gradients.
  void backward() { backward(0, nullptr); }

  // ---- a pipeline stage: this partition on one activation slot ---------------------------
  // input (N, in_floats of the first unit): the images for a partition with the stem, the
  // previous stage's output otherwise. labels: used by a partition with the head (as above);
  // the others ignore them. Keeps everything the slot's backward needs until the slot's next
  // forward. Returns the mean loss (head, with labels) or NaN.
  // input is float: under mixed precision it is rounded into the slot's 16-bit input copy.
  float forward(std::int64_t slot, const float* input, const std::int32_t* labels, std::int64_t N,
                bool training);
  // The same for a partition without the stem, from the previous stage's output in storage S
  // (N, in_floats of the first unit), as a 16-bit pipeline sends it: no rounding on the way.
  float forward_stage(std::int64_t slot, const S* input, const std::int32_t* labels, std::int64_t N,
                      bool training);
  // (N, out_floats of the last unit) of the slot's last forward, for a partition without the
  // head; valid until the slot's next forward.
  const S* output(std::int64_t slot) const;
  // Accumulates the slot's parameter gradients: of the mean loss (doutput nullptr, a
  // partition with the head) or of Σ output·doutput (doutput (N, out_floats) the gradient of
  // output(slot), a partition without the head). The slot's last forward must be a training
  // forward (with labels when the head is here).
  void backward(std::int64_t slot, const S* doutput);
  // (N, in_floats of the first unit): d/d(input) of the last backward, for a partition
  // without the stem (the images need no gradient); valid until the next backward.
  const S* input_gradient() const;

  // Synchronised BatchNorm: when set, training-mode BatchNorm forms its batch statistics (and
  // its backward its Σdy, Σdy·norm) over every rank's batch, the per-channel sums and the
  // element count passed through all_reduce_sum. Every rank must call forward/backward
  // with the same training flag. Empty function: local statistics (the default).
  void set_batchnorm_reducer(BatchnormReducer all_reduce_sum) {
    batchnorm_reducer_ = std::move(all_reduce_sum);
  }
  // Called during backward() as each layer's parameter gradients become final, fc first and
  // the stem last; over one backward() the ranges tile [0, parameter_count()) exactly once.
  void set_gradient_ready_callback(GradientReadyCallback on_ready) {
    gradient_ready_ = std::move(on_ready);
  }

  // ZeRO-3: the weights of each unit come through `gather` (null: the model holds them all, the
  // default). A training or evaluation forward gathers the stem, each block and the head in turn,
  // prefetching the next, and releases each after it; backward gathers them again, head first
  // (a fully recomputed block reads its weights once for both passes). The model's own weights
  // buffer is then read only by readers of every parameter. It must outlive the model's calls.
  void set_unit_parameter_gather(UnitParameterGather* gather) { unit_gather_ = gather; }
  // Unit u's range of the weights (0 the stem, 1 + b block b, then the head; a unit of this
  // partition): one range, a unit's tensors being adjacent in storage order.
  FlatRange unit_parameter_range(std::int64_t unit) const;

  const ResnetConfig& config() const { return config_; }
  kernels::Backend backend() const { return backend_; }
  std::int64_t max_batch() const { return max_batch_; }
  // The units [first, end) this instance holds, end resolved (never kResnetAllUnits).
  ResnetPartition partition() const { return {first_unit_, end_unit_}; }
  bool has_stem() const { return first_unit_ == 0; }
  bool has_head() const { return end_unit_ == static_cast<std::int64_t>(blocks_.size()) + 2; }
  std::int64_t activation_slots() const { return static_cast<std::int64_t>(slots_.size()); }
  // Floats per image of the partition's input and output (resnet_pipeline_units).
  std::int64_t input_floats_per_image() const { return input_floats_; }
  std::int64_t output_floats_per_image() const { return output_floats_; }
  // Tracked bytes of one activation slot (max_batch images; labels included): what each
  // micro-batch in flight costs this partition.
  std::int64_t slot_activation_bytes() const;
  // This partition's parameters (the whole network's: resnet_parameter_count).
  std::int64_t parameter_count() const { return parameter_count_; }
  const S* logits() const;  // (N, classes) of the last forward (a partition with the head)
  // The weights the kernels read (16-bit under mixed precision; parameters_flat() holds the fp32
  // master weights, the same memory in fp32) and the parameter gradients (always fp32).
  const ParameterTensorsT<S>& params() const { return params_; }
  const ParameterTensors& grads() const { return grads_; }
  std::span<float> parameters_flat() { return {master_base_, flat_size()}; }
  std::span<float> gradients_flat() { return {grads_base_, flat_size()}; }
  // The buffer behind gradients_flat(): charged by resident pages under ZeRO-2 (empty for given
  // storage, as the two below).
  TrackedBuffer& gradient_memory() { return grads_memory_; }
  // The 16-bit weights' buffer and the fp32 master weights' (mixed precision; the master's
  // charged by resident pages under ZeRO, whose ranks hold its shards: master_residency).
  TrackedBuffer& parameter_memory() { return params_memory_; }
  TrackedBuffer& master_memory() { return master_memory_; }
  // Rounds fp32 values into the weights' type (out: in.size() elements; a copy in fp32).
  void narrow_to_storage(std::span<const float> in, S* out) const;
  std::span<float> running_statistics_flat() {
    return {statistics_base_, static_cast<std::size_t>(statistics_count_)};
  }
  std::vector<ParameterView> parameter_views();
  std::vector<StatisticsView> statistics_views();
  // Every parameter tensor, all with weight decay (torch.optim.SGD without parameter
  // groups). The running statistics are not among them.
  std::vector<optim::ParameterSlice> parameter_slices();

 private:
  // ZeRO-3: holds a unit's weights gathered for as long as it lives (params() itself without a
  // gather); unit `next` (-1: none) is prefetched. The views map a weight of params() to where
  // the gather put it.
  class HeldUnit {
   public:
    HeldUnit(const ResnetModelT& model, std::int64_t unit, std::int64_t next);
    HeldUnit(const HeldUnit&) = delete;
    HeldUnit& operator=(const HeldUnit&) = delete;
    ~HeldUnit();
    S* w(S* in_params) const;
    BatchNormTensorsT<S> bn(const BatchNormTensorsT<S>& in_params) const { return {w(in_params.weight), w(in_params.bias)}; }
    BlockTensorsT<S> block(const BlockTensorsT<S>& in_params) const;

   private:
    UnitParameterGather* gather_;
    const S* params_base_;
    S* gathered_ = nullptr;
    FlatRange range_;
  };
  // The unit after `unit` in forward (step +1) or backward (step -1) order here, or -1.
  std::int64_t next_unit(std::int64_t unit, std::int64_t step) const {
    const std::int64_t next = unit + step;
    return next >= first_unit_ && next < end_unit_ ? next : -1;
  }
  std::size_t flat_size() const { return static_cast<std::size_t>(parameter_count_); }
  void reset_running_statistics();
  // inp (N, C, HW) -> out (N, C, HW) = [relu](bn(inp) [+ residual]), training or eval.
  void batchnorm_forward(S* out, const BatchStatistics& saved,
                         const RunningStatistics& running, const S* inp,
                         const BatchNormTensorsT<S>& bn, const S* residual, bool relu,
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training);
  // dout (N, C, HW), with relu_out the forward's output when it had a ReLU -> dinp (N, C, HW)
  // overwritten; dweight, dbias += and reported ready.
  void batchnorm_backward(S* dinp, const BatchNormTensors& grad, const S* dout,
                          const S* relu_out, const S* inp, const BatchNormTensorsT<S>& bn,
                          const BatchStatistics& saved, std::int64_t N, std::int64_t C,
                          std::int64_t HW);
  // The reducer over sums (2C + 1: two per channel and the count), when one is set.
  void reduce_batchnorm_sums(std::int64_t C);
  // Reports [first, first + count) of the gradients as final.
  void gradient_ready(const float* first, std::int64_t count);
  // forward / forward_stage: In is float (rounded into the slot's input copy) or S (copied).
  template <class In>
  float forward_from(std::int64_t slot, const In* input, const std::int32_t* labels, std::int64_t N, bool training);
  // p: block b's weights (params() or where its ZeRO-3 gather put them)
  void block_forward(const ActivationTensorsT<S>& a, std::size_t b, const BlockTensorsT<S>& p, const S* inp,
                     std::int64_t N, bool training);
  // Full recomputation: points the blocks' dropped views of `a` into the recompute scratch for N
  // images (the placeholder when only recording); and, before block b's backward, writes them
  // again from its input inp and the statistics its training forward kept.
  void point_recomputed_views(ActivationTensorsT<S>& a, std::int64_t N);
  void recompute_block(const ActivationTensorsT<S>& a, std::size_t b, const BlockTensorsT<S>& p, const S* inp,
                       std::int64_t N);
  void block_backward(const ActivationTensorsT<S>& a, std::size_t b, const BlockTensorsT<S>& p, S* dinp,
                      const S* dout, const S* inp, std::int64_t N);
  bool has_block(std::size_t b) const {
    return static_cast<std::int64_t>(b) + 1 >= first_unit_ &&
           static_cast<std::int64_t>(b) + 1 < end_unit_;
  }

  // One micro-batch's activations and what its backward needs to know.
  struct Slot {
    ActivationTensorsT<S> acts{};
    std::int32_t* labels = nullptr;  // (max_batch) when the head is here
    const S* output = nullptr;       // the last unit's output
    std::int64_t N = 0;
    bool backward_ready = false;     // a training forward (with labels when the head is here)
  };

  ResnetConfig config_;
  std::vector<ResnetBlockShape> blocks_;
  kernels::Backend backend_;
  kernels::StorageKernels<S> k_;
  std::int64_t max_batch_, parameter_count_;
  double loss_scale_ = 1.0;
  SoftTargets soft_targets_;
  std::int64_t first_unit_ = 0, end_unit_ = 0;  // the partition
  bool full_recompute_ = false;
  std::int64_t input_floats_ = 0, output_floats_ = 0;
  std::vector<std::int64_t> unit_offsets_;  // where unit first_unit_ + i starts in the weights; then the end

  TrackedBuffer params_memory_;      // params: the weights the kernels read (S)
  TrackedBuffer master_memory_;      // optimizer: fp32 master weights (16-bit S only)
  TrackedBuffer grads_memory_;       // grads (float)
  TrackedBuffer statistics_memory_;  // params: running mean and variance, 2·(BN channels)
  TrackedBuffer acts_memory_;        // activations: every slot's set
  TrackedBuffer scratch_memory_;     // activations: the shortcut scratch (N, max C·H·W)
  TrackedBuffer recompute_memory_;   // activations: one block's recomputed tensors (full recompute)
  TrackedBuffer labels_memory_;      // activations: labels, int32 (slots, N), with the head
  TrackedBuffer acts_grads_memory_;  // workspace
  ParameterTensorsT<S> params_{};
  ParameterTensors master_{};  // params_ itself in fp32
  float* master_base_ = nullptr;  // the fp32 master weights (the weights themselves in fp32)
  S* params_base_ = nullptr;
  float* grads_base_ = nullptr;
  float* statistics_base_ = nullptr;
  std::int64_t statistics_count_ = 0;
  ParameterTensors grads_{};
  RunningStatisticsTensors statistics_{};
  std::vector<Slot> slots_;
  // The shortcut's BatchNorm output dies at the residual add, which is fused (with the ReLUs)
  // into the BatchNorm passes: one tensor serves every block of every slot.
  S* shortcut_bn_out_ = nullptr;
  ActivationGradientsT<S> acts_grads_{};
  const S* input_gradient_ = nullptr;
  std::int64_t last_slot_ = 0;  // of the last forward

  BatchnormReducer batchnorm_reducer_;
  GradientReadyCallback gradient_ready_;
  UnitParameterGather* unit_gather_ = nullptr;
  std::vector<double> batchnorm_sums_;  // (2·max C + 1) per-channel sums and the count
  // A record-only model's views all point here: passed to the kernels, never read or written.
  alignas(64) std::array<std::byte, 64> recording_placeholder_{};
};

using ResnetModel = ResnetModelT<float>;
extern template class ResnetModelT<float>;
extern template class ResnetModelT<bf16>;
extern template class ResnetModelT<fp16>;

}  // namespace sb::resnet
