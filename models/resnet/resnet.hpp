// resnet-mini, llm.c style: parameters, gradients, BatchNorm running statistics, activations
// each in one tracked allocation with named views. Leaves out bottleneck blocks, the max-pool
// stem (resnet-18/50 are cost-model specs only), mixed precision and communication itself:
// data parallelism plugs in through two hooks (a BatchNorm sum reducer, a gradient-ready
// callback), so models never depend on MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/tensor.hpp"
#include "kernels/kernels.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::resnet {

// PyTorch's BatchNorm2d defaults.
inline constexpr double kBatchNormMomentum = 0.1;
inline constexpr double kBatchNormEps = 1e-5;

// ---- parameters (and, mirrored, gradients) ------------------------------------------------
struct BatchNormTensors {
  float* weight;  // (C) γ
  float* bias;    // (C) β
};

// One BasicBlock: conv1 (stride) → bn1 → ReLU → conv2 → bn2, + shortcut, ReLU.
struct BlockTensors {
  float* conv1;                  // (OC, IC, 3, 3)
  BatchNormTensors bn1;          // (OC)
  float* conv2;                  // (OC, OC, 3, 3)
  BatchNormTensors bn2;          // (OC)
  float* shortcut_conv;          // (OC, IC, 1, 1); nullptr for the identity shortcut
  BatchNormTensors shortcut_bn;  // (OC); nullptr for the identity shortcut
};

struct ParameterTensors {
  float* stem_conv;          // (16, 1, 3, 3)
  BatchNormTensors stem_bn;  // (16)
  std::vector<BlockTensors> blocks;  // stage1.0, stage1.1, stage2.0, ...
  float* fc_weight;          // (classes, 64)
  float* fc_bias;            // (classes)
};

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
struct BlockActivations {
  float* conv1;                  // bn1's input
  BatchStatistics bn1;
  float* relu1;                  // conv2's input
  float* conv2;                  // bn2's input
  BatchStatistics bn2;
  float* shortcut_conv;          // shortcut bn's input; nullptr for the identity
  BatchStatistics shortcut_bn;
  float* out;                    // relu(bn2 + shortcut): the next block's input
};

// What the backward reads, for N images; a smaller batch packs into the front.
struct ActivationTensors {
  float* images;       // (N, 1, 28, 28) a copy of the input
  float* stem_conv;    // (N, 16, 28, 28)
  BatchStatistics stem_bn;
  float* stem_relu;    // (N, 16, 28, 28) stage1.0's input
  std::vector<BlockActivations> blocks;
  float* pooled;       // (N, 64)
  float* logits;       // (N, classes)
  float* probs;        // (N, classes)
  float* losses;       // (N)
  // Scratch, (N, max C·H·W), reused by every block: the shortcut's BatchNorm output dies at
  // the residual add, which is fused (with the ReLUs) into the BatchNorm passes.
  float* shortcut_bn_out;
};

// Backward scratch, each (N, max C·H·W) after the head's: the gradients of a block's output
// and input (swapped block by block) and of one block's convolution outputs, reused by every
// block (dconv1 also by the stem). The ReLU masks and the residual split are fused into the
// BatchNorm backward, which overwrites dconv*: only dblock_in and drelu1 (sums of
// convolution backwards) are zeroed each block.
struct ActivationGradients {
  float* dlosses;           // (N) 1/N: the loss is the mean
  float* dlogits;           // (N, classes)
  float* dpooled;           // (N, 64)
  float* dblock_out;
  float* dblock_in;
  float* dconv2;
  float* drelu1;
  float* dconv1;
  float* dshortcut_conv;
};

// all_reduce_sum(values): replaces values by their sum over every data-parallel rank.
using BatchnormReducer = std::function<void(std::span<double>)>;
// (offset, count) in floats into gradients_flat(): that range is final for this backward().
using GradientReadyCallback = std::function<void(std::int64_t offset, std::int64_t count)>;

// Bytes of the forward activations (images included, labels not) and of the backward
// scratch for N images, float32.
std::int64_t resnet_activation_bytes(const ResnetConfig& config, std::int64_t N);
std::int64_t resnet_activation_gradient_bytes(const ResnetConfig& config, std::int64_t N);

class ResnetModel {
 public:
  // Allocates everything for batches up to max_batch; parameters start at zero, running
  // statistics at mean 0, variance 1. Throws UserError for a spec-only config.
  ResnetModel(const ResnetConfig& config, std::int64_t max_batch, kernels::Backend backend,
              MemoryTracker& tracker);

  // Kaiming normal (fan_out, ReLU gain) convs, BatchNorm weight 1 bias 0, nn.Linear's
  // uniform(±1/sqrt(64)) head; running statistics reset. Element i of parameter tensor k
  // draws from CounterRng(seed, k) at index i: independent of thread count.
  void init_weights(std::uint64_t seed);

  // images (N, 1, 28, 28), labels (N) in [0, classes) or nullptr; 1 <= N <= max_batch.
  // training: BatchNorm uses batch statistics and updates the running ones; else it uses
  // the running statistics. Returns the mean cross-entropy, or NaN without labels. Only a
  // training forward with labels can be followed by backward().
  float forward(const float* images, const std::int32_t* labels, std::int64_t N, bool training);
  void zero_grad();
  // Accumulates d(mean loss)/d(parameters) of the last forward into the gradients.
  void backward();

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

  const ResnetConfig& config() const { return config_; }
  kernels::Backend backend() const { return backend_; }
  std::int64_t max_batch() const { return max_batch_; }
  std::int64_t parameter_count() const { return parameter_count_; }
  const float* logits() const { return acts_.logits; }  // (N, classes) of the last forward
  const ParameterTensors& params() const { return params_; }
  const ParameterTensors& grads() const { return grads_; }
  std::span<float> parameters_flat() { return {params_.stem_conv, flat_size()}; }
  std::span<float> gradients_flat() { return {grads_.stem_conv, flat_size()}; }
  std::span<float> running_statistics_flat() {
    return {statistics_memory_.as<float>(),
            static_cast<std::size_t>(statistics_memory_.bytes()) / sizeof(float)};
  }
  std::vector<ParameterView> parameter_views();
  std::vector<StatisticsView> statistics_views();
  // Every parameter tensor, all with weight decay (torch.optim.SGD without parameter
  // groups). The running statistics are not among them.
  std::vector<optim::ParameterSlice> parameter_slices();

 private:
  std::size_t flat_size() const { return static_cast<std::size_t>(parameter_count_); }
  void reset_running_statistics();
  // inp (N, C, HW) -> out (N, C, HW) = [relu](bn(inp) [+ residual]), training or eval.
  void batchnorm_forward(float* out, const BatchStatistics& saved,
                         const RunningStatistics& running, const float* inp,
                         const BatchNormTensors& bn, const float* residual, bool relu,
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training);
  // dout (N, C, HW), with relu_out the forward's output when it had a ReLU -> dinp (N, C, HW)
  // overwritten; dweight, dbias += and reported ready.
  void batchnorm_backward(float* dinp, const BatchNormTensors& grad, const float* dout,
                          const float* relu_out, const float* inp, const BatchNormTensors& bn,
                          const BatchStatistics& saved, std::int64_t N, std::int64_t C,
                          std::int64_t HW);
  // The reducer over sums (2C + 1: two per channel and the count), when one is set.
  void reduce_batchnorm_sums(std::int64_t C);
  // Reports [first, first + count) of the gradients as final.
  void gradient_ready(const float* first, std::int64_t count);
  void block_forward(std::size_t b, const float* inp, std::int64_t N, bool training);
  void block_backward(std::size_t b, float* dinp, const float* dout, const float* inp,
                      std::int64_t N);

  ResnetConfig config_;
  std::vector<ResnetBlockShape> blocks_;
  kernels::Backend backend_;
  const kernels::KernelTable* k_;
  std::int64_t max_batch_, parameter_count_;

  TrackedBuffer params_memory_;      // params
  TrackedBuffer grads_memory_;       // grads
  TrackedBuffer statistics_memory_;  // params: running mean and variance, 2·(BN channels)
  TrackedBuffer acts_memory_;        // activations
  TrackedBuffer labels_memory_;      // activations: labels, int32 (N)
  TrackedBuffer acts_grads_memory_;  // workspace
  ParameterTensors params_{};
  ParameterTensors grads_{};
  RunningStatisticsTensors statistics_{};
  ActivationTensors acts_{};
  ActivationGradients acts_grads_{};
  std::int32_t* labels_ = nullptr;

  std::int64_t last_N_ = 0;
  bool backward_ready_ = false;  // the last forward was a training forward with labels

  BatchnormReducer batchnorm_reducer_;
  GradientReadyCallback gradient_ready_;
  std::vector<double> batchnorm_sums_;  // (2·max C + 1) per-channel sums and the count
};

}  // namespace sb::resnet
