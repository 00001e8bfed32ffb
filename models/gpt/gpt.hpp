// The GPT-2 reference model, llm.c style: parameters, gradients, activations each in one tracked
// allocation with named views. Leaves out sampling, mixed precision and parallelism.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/tensor.hpp"
#include "kernels/kernels.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::gpt {

inline constexpr int kParameterTensorCount = 16;

// Views into the one parameter (or gradient) allocation, in llm.c's order.
struct ParameterTensors {
  float* wte;       // (V, C)      token embedding, also the output head
  float* wpe;       // (maxT, C)   position embedding
  float* ln1w;      // (L, C)
  float* ln1b;      // (L, C)
  float* qkvw;      // (L, 3C, C)  rows [q | k | v]
  float* qkvb;      // (L, 3C)
  float* attprojw;  // (L, C, C)
  float* attprojb;  // (L, C)
  float* ln2w;      // (L, C)
  float* ln2b;      // (L, C)
  float* fcw;       // (L, 4C, C)
  float* fcb;       // (L, 4C)
  float* fcprojw;   // (L, C, 4C)
  float* fcprojb;   // (L, C)
  float* lnfw;      // (C)
  float* lnfb;      // (C)

  std::array<float**, kParameterTensorCount> members();
};

enum class ParameterInit { normal_0_02, zeros, ones };

// Name, shape, weight decay and initialisation of each parameter tensor, in storage order.
struct ParameterSpec {
  const char* name;
  Shape shape;
  bool weight_decay;  // matrices and embeddings; not biases or LayerNorm
  ParameterInit init;
};
std::array<ParameterSpec, kParameterTensorCount> gpt_parameter_specs(const GptConfig& config);

// One parameter tensor with its gradient, for optimizers, checkpoints and tests.
struct ParameterView {
  std::string name;
  float* param;
  float* grad;
  std::int64_t numel;
  bool weight_decay;
};

// Forward activations for (B, T); layer l of an (L, B, T, ...) tensor starts at l·B·T·...
// for the B and T of the current call, so a smaller batch packs into the front.
struct ActivationTensors {
  float* encoded;    // (B, T, C)        wte[token] + wpe[t]
  float* ln1;        // (L, B, T, C)
  float* ln1_mean;   // (L, B, T)
  float* ln1_rstd;   // (L, B, T)
  float* qkv;        // (L, B, T, 3C)
  float* att;        // (L, B, NH, T, T) causal softmax probabilities
  float* atty;       // (L, B, T, C)     attention output before the projection
  float* attproj;    // (L, B, T, C)
  float* residual2;  // (L, B, T, C)
  float* ln2;        // (L, B, T, C)
  float* ln2_mean;   // (L, B, T)
  float* ln2_rstd;   // (L, B, T)
  float* fch;        // (L, B, T, 4C)
  float* fch_gelu;   // (L, B, T, 4C)
  float* fcproj;     // (L, B, T, C)
  float* residual3;  // (L, B, T, C)     output of block l
  float* lnf;        // (B, T, C)
  float* lnf_mean;   // (B, T)
  float* lnf_rstd;   // (B, T)
  float* logits;     // (B, T, V)
  float* probs;      // (B, T, V)
  float* losses;     // (B, T)
};

// Backward scratch: gradients of the activations of ONE block (reused for every block),
// two residual-stream gradients (into and out of the block) and the head's.
struct ActivationGradients {
  float* dlosses;        // (B, T)     1/(B·T): the loss is the mean
  float* dlogits;        // (B, T, V)
  float* dlnf;           // (B, T, C)
  float* dresidual_out;  // (B, T, C)  gradient of the block's output
  float* dresidual_in;   // (B, T, C)  gradient of the block's input
  float* dln1;           // (B, T, C)
  float* dqkv;           // (B, T, 3C)
  float* datty;          // (B, T, C)
  float* dattproj;       // (B, T, C)
  float* dresidual2;     // (B, T, C)
  float* dln2;           // (B, T, C)
  float* dfch;           // (B, T, 4C)
  float* dfch_gelu;      // (B, T, 4C)
  float* dfcproj;        // (B, T, C)
};

// Bytes of the forward activations and of the backward scratch for (B, T), float32.
std::int64_t gpt_activation_bytes(const GptConfig& config, std::int64_t B, std::int64_t T);
std::int64_t gpt_activation_gradient_bytes(const GptConfig& config, std::int64_t B,
                                           std::int64_t T);

class GptModel {
 public:
  // Allocates everything for batches up to (batch, seq_len); parameters start at zero.
  GptModel(const GptConfig& config, std::int64_t batch, std::int64_t seq_len,
           kernels::Backend backend, MemoryTracker& tracker);

  // normal(0, 0.02) matrices and embeddings, zero biases, LayerNorm weight 1. Element i of
  // tensor k draws CounterRng(seed, k).normal(i): independent of thread count.
  void init_weights(std::uint64_t seed);

  // tokens, targets (B, T) in [0, V); B <= batch, T <= seq_len. Returns the mean
  // cross-entropy, or NaN when targets is nullptr (logits only, no backward possible).
  float forward(const std::int32_t* tokens, const std::int32_t* targets, std::int64_t B,
                std::int64_t T);
  void zero_grad();
  // Accumulates d(mean loss)/d(parameters) of the last forward into the gradients.
  void backward();

  // Called during backward() as soon as a gradient range is final for that call: one layer's
  // slice of each (L, ...) tensor after the layer, lnf after the head, wte and wpe after the
  // embedding; offset and count in floats into gradients_flat(). Over one backward() the
  // ranges tile every parameter exactly once. Data parallelism starts all-reduces from it.
  using GradientReadyCallback = std::function<void(std::int64_t offset, std::int64_t count)>;
  void set_gradient_ready_callback(GradientReadyCallback callback) { gradient_ready_ = std::move(callback); }

  const GptConfig& config() const { return config_; }
  kernels::Backend backend() const { return backend_; }
  std::int64_t max_batch() const { return max_batch_; }
  std::int64_t max_seq_len() const { return max_seq_len_; }
  std::int64_t parameter_count() const { return parameter_count_; }
  const float* logits() const { return acts_.logits; }  // (B, T, V) of the last forward
  const ParameterTensors& params() const { return params_; }
  const ParameterTensors& grads() const { return grads_; }
  std::span<float> parameters_flat() { return {params_.wte, flat_size()}; }
  std::span<float> gradients_flat() { return {grads_.wte, flat_size()}; }
  std::vector<ParameterView> parameter_views();
  std::vector<optim::ParameterSlice> parameter_slices();

 private:
  std::size_t flat_size() const { return static_cast<std::size_t>(parameter_count_); }

  GptConfig config_;
  kernels::Backend backend_;
  const kernels::KernelTable* k_;
  std::int64_t max_batch_, max_seq_len_, parameter_count_;

  TrackedBuffer params_memory_;       // params
  TrackedBuffer grads_memory_;        // grads
  TrackedBuffer acts_memory_;         // activations
  TrackedBuffer inputs_memory_;       // activations: tokens and targets, int32 (2, B, T)
  TrackedBuffer acts_grads_memory_;   // workspace
  ParameterTensors params_{};
  ParameterTensors grads_{};
  ActivationTensors acts_{};
  ActivationGradients acts_grads_{};
  std::int32_t* tokens_ = nullptr;
  std::int32_t* targets_ = nullptr;

  std::int64_t last_B_ = 0, last_T_ = 0;
  bool backward_ready_ = false;  // the last forward had targets
  GradientReadyCallback gradient_ready_;
};

}  // namespace sb::gpt
