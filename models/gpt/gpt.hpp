// SPDX-License-Identifier: Apache-2.0
// The GPT-2 reference model, llm.c style: parameters, gradients, activations each in one tracked
// allocation with named views. A GptPartition (gpt_partition.hpp) makes it one rank's part of a
// model-parallel GPT: a pipeline stage (blocks [begin, end), with or without embedding and
// head, several micro-batches' activations alive at once) and/or a Megatron tensor-parallel
// shard. Leaves out sampling, mixed precision, communication (tp collectives are hooks) and the
// pipeline schedule. On the cuda back-end every allocation lives on the GPU (tokens and targets
// are passed from the host and copied; a stage's input and d(output) are device memory, and
// the tp hooks get device spans), in fp32 or with 16-bit storage (native tensor-core kernels,
// storage_kernels.hpp). Under mixed precision (GptModelT<bf16>, GptModelT<fp16>) the weights the
// kernels read, the activations and their gradients are 16-bit (kernels/storage_kernels.hpp); the
// fp32 master weights (what optimizers update), the parameter gradients, LayerNorm statistics
// and the losses stay float.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/finite_scan.hpp"
#include "core/memory.hpp"
#include "core/tensor.hpp"
#include "core/unit_parameter_gather.hpp"
#include "kernels/kernels.hpp"
#include "kernels/storage_kernels.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::gpt {

inline constexpr int kParameterTensorCount = kGptTensorCount;

// Views into the one parameter (or gradient) allocation, in llm.c's order. Shapes of the unsplit
// model; a partition holds L_s = end - begin blocks and, over t tp ranks, the shapes in
// brackets (gpt_partition.hpp); a tensor it does not hold has no elements.
template <class S>
struct ParameterTensorsT {
  S* wte;       // (V, C)      token embedding, also the output head   [(V_r, C)]
  S* wpe;       // (maxT, C)   position embedding
  S* ln1w;      // (L, C)
  S* ln1b;      // (L, C)
  S* qkvw;      // (L, 3C, C)  rows [q | k | v]   [(L, 3C/t, C): [q_r | k_r | v_r]]
  S* qkvb;      // (L, 3C)                        [(L, 3C/t)]
  S* attprojw;  // (L, C, C)                      [(L, C, C/t)] row-parallel
  S* attprojb;  // (L, C)
  S* ln2w;      // (L, C)
  S* ln2b;      // (L, C)
  S* fcw;       // (L, 4C, C)                     [(L, 4C/t, C)] column-parallel
  S* fcb;       // (L, 4C)                        [(L, 4C/t)]
  S* fcprojw;   // (L, C, 4C)                     [(L, C, 4C/t)] row-parallel
  S* fcprojb;   // (L, C)
  S* lnfw;      // (C)
  S* lnfb;      // (C)

  std::array<S**, kParameterTensorCount> members();
};
using ParameterTensors = ParameterTensorsT<float>;

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
// for the B and T of the current call, so a smaller batch packs into the front. On a partition
// L is the stage's block count and 3C, NH, 4C, V read 3C/t, NH/t, 4C/t, V_r; lnf..ce_stats
// exist on the head stage only. `encoded` is the stage input on a stage without embedding.
// Under recomputation (GptShard::recompute) a slot holds no layers of the tensors its mode drops
// (selective: att; full: ln1 .. fcproj, all but residual3, the next block's input); those have
// one layer in the recompute scratch, the same struct held once for all slots (encoded,
// residual3 and the head's tensors empty there).
template <class S>
struct ActivationTensorsT {
  S* encoded;    // (B, T, C)        wte[token] + wpe[t]
  S* ln1;        // (L, B, T, C)
  float* ln1_mean;   // (L, B, T)
  float* ln1_rstd;   // (L, B, T)
  S* qkv;        // (L, B, T, 3C)
  S* att;        // (L, B, NH, T, T) causal softmax probabilities
  S* atty;       // (L, B, T, C)     attention output before the projection
  S* attproj;    // (L, B, T, C)
  S* residual2;  // (L, B, T, C)
  S* ln2;        // (L, B, T, C)
  float* ln2_mean;   // (L, B, T)
  float* ln2_rstd;   // (L, B, T)
  S* fch;        // (L, B, T, 4C)
  S* fch_gelu;   // (L, B, T, 4C)
  S* fcproj;     // (L, B, T, C)
  S* residual3;  // (L, B, T, C)     output of block l
  S* lnf;        // (B, T, C)
  float* lnf_mean;   // (B, T)
  float* lnf_rstd;   // (B, T)
  S* logits;     // (B, T, V)
  S* probs;      // (B, T, V)
  float* losses;     // (B, T)
  float* ce_stats;   // (3, B, T)  tp > 1: row max | exp-sum | target logit over the vocabulary
  // Sequence parallel, in the one-block scratch only: a LayerNorm output gathered over the tp
  // group, or a row-parallel linear's partial sums before their reduce-scatter.
  S* gathered;       // (B, T, C)
};
using ActivationTensors = ActivationTensorsT<float>;

// Backward scratch: gradients of the activations of ONE block (reused for every block),
// two residual-stream gradients (into and out of the block) and the head's.
template <class S>
struct ActivationGradientsT {
  float* dlosses;        // (B, T)     1/(B·T): the loss is the mean
  S* dlogits;        // (B, T, V)
  S* dlnf;           // (B, T, C)
  S* dresidual_out;  // (B, T, C)  gradient of the block's output
  S* dresidual_in;   // (B, T, C)  gradient of the block's input
  S* dln1;           // (B, T, C)
  S* dqkv;           // (B, T, 3C)
  S* datty;          // (B, T, C)
  S* dattproj;       // (B, T, C)
  S* dresidual2;     // (B, T, C)
  S* dln2;           // (B, T, C)
  S* dfch;           // (B, T, 4C)
  S* dfch_gelu;      // (B, T, 4C)
  S* dfcproj;        // (B, T, C)
  // Sequence parallel: an output gradient gathered over the tp group, or a column-parallel
  // linear's partial input gradient before its reduce-scatter (all B·T rows).
  S* dall_rows;      // (B, T, C)
};
using ActivationGradients = ActivationGradientsT<float>;

// Bytes of the forward activations (one slot) and of the backward scratch for (B, T) with storage
// S (float32 by default; statistics are float in every precision).
template <class S = float>
std::int64_t gpt_activation_bytes(const GptConfig& config, std::int64_t B, std::int64_t T,
                                  Recompute recompute = Recompute::none);
template <class S = float>
std::int64_t gpt_activation_gradient_bytes(const GptConfig& config, std::int64_t B, std::int64_t T);
// The same for one activation slot of a shard; tp_split: the bytes of the tensors cut over
// the tp group (qkv, att, atty, fch, fch_gelu, logits, probs), 1/t of the unsplit ones.
struct GptActivationBytes {
  std::int64_t total = 0, tp_split = 0;
};
// Slot bytes follow shard.recompute; the recompute scratch (one block's dropped tensors, held
// once whatever the slots) is gpt_shard_recompute_scratch_bytes, 0 with recompute none.
template <class S = float>
GptActivationBytes gpt_shard_activation_bytes(const GptShard& shard, std::int64_t B, std::int64_t T);
template <class S = float>
GptActivationBytes gpt_shard_recompute_scratch_bytes(const GptShard& shard, std::int64_t B, std::int64_t T);
template <class S = float>
std::int64_t gpt_shard_activation_gradient_bytes(const GptShard& shard, std::int64_t B, std::int64_t T);

// Where a model's parameters live when its owner lays several models into one allocation (a
// pipeline rank's interleaved chunks under one flat span for the optimizer and the gradient
// exchange): the weights the kernels read (S), the fp32 master copy (16-bit S only) and the
// gradients, flat_size() elements each, zeroed, in the backend's memory and tracked by the
// owner. All nullptr: the model allocates its own.
template <class S>
struct GptParameterStorageT {
  S* params = nullptr;
  float* master = nullptr;
  float* grads = nullptr;
};

template <class S>
class GptModelT {
 public:
  // Allocates everything for batches up to (batch, seq_len); parameters start at zero. The
  // default partition is the whole model on one rank. `appended_parameters` floats follow the
  // GPT's own in the parameter and gradient allocations, for a task's head on the hidden states
  // (sequence classification): parameters_flat() and gradients_flat() cover them, the views,
  // slices and init_weights do not; zero_grad zeroes their gradients.
  // With a recorder every kernel call is logged there (kernels/kernel_recorder.hpp), in units
  // "embedding", "block" (one per block), "head" and, opening a backward without the head,
  // "boundary"; a record_only recorder makes a model that allocates nothing and runs no
  // kernel or copy, whose forward_stage and backward_stage only record (losses NaN): the cost
  // model's description of a unit at any size.
  GptModelT(const GptConfig& config, std::int64_t batch, std::int64_t seq_len,
            kernels::Backend backend, MemoryTracker& tracker, GptPartition partition = {},
            std::int64_t appended_parameters = 0, kernels::KernelRecorder* recorder = nullptr,
            GptParameterStorageT<S> storage = {});

  // normal(0, 0.02) matrices and embeddings, zero biases, LayerNorm weight 1. Element i of
  // tensor k draws CounterRng(seed, k).normal(i): independent of thread count. A partition's
  // element draws the number of its index in the unsplit tensor, so every shard starts equal
  // to its slice of the one-rank model.
  void init_weights(std::uint64_t seed);

  // Mixed precision: rounds the fp32 master weights into the 16-bit weights the kernels read;
  // call after every change of parameters_flat() (an optimizer step, a broadcast). Nothing to
  // do in fp32, where the two are one, nor under ZeRO-3 (set_unit_parameter_gather), where the
  // 16-bit weights come from the gathers.
  void sync_storage_parameters();
  // The factor d(loss)/d(loss) starts backward with (fp16 loss scaling); 1 by default. The
  // parameter gradients then carry this factor until the optimizer divides it out.
  void set_loss_scale(double scale) { loss_scale_ = scale; }

  // tokens, targets (B, T) in [0, V), host memory; B <= batch, T <= seq_len. Returns the mean
  // cross-entropy, or NaN when targets is nullptr (logits only, no backward possible).
  // Equals forward_stage(0, tokens, nullptr, targets, B, T) on the whole model.
  float forward(const std::int32_t* tokens, const std::int32_t* targets, std::int64_t B,
                std::int64_t T);
  void zero_grad();
  // Accumulates d(mean loss)/d(parameters) of the last forward into the gradients
  // (backward_stage(0, nullptr)).
  void backward();

  // ---- the final hidden states, for tasks other than next-byte prediction -----------------
  // Whole model on one rank. Forward of tokens (B, T) (host memory) through the final LayerNorm,
  // without the tied output head; returns lnf (B, T, C) of slot 0, valid until the next forward.
  const S* forward_hidden(const std::int32_t* tokens, std::int64_t B, std::int64_t T);
  // Accumulates d(loss)/d(parameters) from dhidden (B, T, C) = d(loss)/d(forward_hidden's
  // output) of the last forward_hidden (backend memory, as that output); loss scaling is the
  // caller's (dhidden carries it).
  void backward_hidden(const S* dhidden);
  // The appended parameters and their gradients (appended_parameters floats each).
  std::span<float> appended_parameters_flat() { return {master_.wte + parameter_count_, appended_size()}; }
  std::span<float> appended_gradients_flat() { return {grads_.wte + parameter_count_, appended_size()}; }

  // ---- pipeline stages (any partition; the whole model is the one-stage case) -------------
  // Forward of one micro-batch into activation slot `slot` (< activation_slots). The embedding
  // stage reads tokens (B, T); another stage reads input (B, T, C), the previous stage's
  // output. targets (B, T) are read on the head stage only; returns its mean loss, else NaN.
  // With tp > 1 every tp rank calls this with the same tokens/input/targets (collectives).
  float forward_stage(std::int64_t slot, const std::int32_t* tokens, const S* input,
                      const std::int32_t* targets, std::int64_t B, std::int64_t T);
  // Residual output of the last block held (B, T, C) of slot's last forward; non-head stages.
  const S* stage_output(std::int64_t slot) const;
  // Accumulates the gradients of slot's micro-batch. The head stage starts from its own mean
  // loss (doutput nullptr); another stage from doutput (B, T, C) = d(loss)/d(stage_output).
  // The slot may be reused by the next forward_stage once this returns.
  void backward_stage(std::int64_t slot, const S* doutput);
  // d(loss)/d(input) (B, T, C) of the last backward_stage; stages without embedding. Valid
  // until the next backward_stage.
  const S* stage_input_gradient() const;
  // This rank's shard of the wte gradient (V_r, C), on the embedding and on the head stage.
  // When they are different stages the trainer sums the two (as Megatron) so that both copies
  // of the tied weight take identical updates.
  std::span<float> tied_embedding_gradient();
  // Under sequence parallelism: the LayerNorm weight and bias gradients (ln1, ln2, lnf), each
  // tp rank's sum over its own token rows only; the trainer sums them over the tp group once
  // a step (as Megatron-LM does for its sequence-parallel parameters). Empty without it.
  std::vector<std::span<float>> sequence_parallel_gradients();

  // Called during backward() as soon as a gradient range is final for that call: one layer's
  // slice of each (L, ...) tensor after the layer, lnf after the head, wte and wpe after the
  // embedding (wte after the head on a head stage without embedding); offset and count in
  // floats into gradients_flat(). Over one backward() the ranges tile every parameter of this
  // rank exactly once. Data parallelism starts all-reduces from it.
  using GradientReadyCallback = std::function<void(std::int64_t offset, std::int64_t count)>;
  void set_gradient_ready_callback(GradientReadyCallback callback) { gradient_ready_ = std::move(callback); }

  // ZeRO-3: the weights of each unit come through `gather` (null: the model holds them all, the
  // default). Forward gathers the embedding, each block and the head in turn, prefetching the
  // next, and releases each after it; backward the head and the blocks again, last to first (the
  // embedding's backward reads no weights), reading each unit's weights where the gather put
  // them; the model's own parameter buffer is then touched only to initialise and for readers of
  // every parameter (GptPartition::parameter_residency). It must outlive the model's calls.
  void set_unit_parameter_gather(UnitParameterGather* gather) { unit_gather_ = gather; }
  // A unit's ranges of parameters_flat(), sorted by offset (empty tensors left out): the
  // embedding wte and wpe; block l (0 <= l < shard().L) its layer of each (L, ...) tensor; the
  // head lnfw, lnfb and wte (tied).
  enum class Unit { embedding, block, head };
  std::vector<FlatRange> unit_parameter_ranges(Unit unit, std::int64_t l = 0) const;

  const GptConfig& config() const { return config_; }
  const GptShard& shard() const { return shard_; }
  kernels::Backend backend() const { return backend_; }
  std::int64_t max_batch() const { return max_batch_; }
  std::int64_t max_seq_len() const { return max_seq_len_; }
  std::int64_t parameter_count() const { return parameter_count_; }  // this rank's
  std::int64_t activation_slots() const { return shard_.activation_slots; }
  // Tracked activation bytes of one slot (activations, tokens and targets) at the allocated
  // (batch, seq_len): what each micro-batch in flight costs. The recompute scratch, held once,
  // is recompute_scratch_bytes().
  std::int64_t slot_activation_bytes() const;
  std::int64_t recompute_scratch_bytes() const;
  Recompute recompute() const { return shard_.recompute; }
  // (B, T, V_r) of the last forward into slot 0 (this rank's vocabulary rows when tp > 1)
  const S* logits() const { return slots_.front().acts.logits; }
  // Every pointer and span below is in the backend's memory (device() of it: the GPU on cuda).
  Device device() const { return device_; }
  // The weights the kernels read (16-bit under mixed precision; parameters_flat() holds the fp32
  // master weights, the same memory in fp32) and the parameter gradients (always fp32).
  const ParameterTensorsT<S>& params() const { return params_; }
  const ParameterTensors& grads() const { return grads_; }
  // The GPT's parameters then the appended ones.
  std::span<float> parameters_flat() { return {master_.wte, flat_size()}; }
  std::span<float> gradients_flat() { return {grads_.wte, flat_size()}; }
  // The buffer behind gradients_flat() when the model owns it (empty for given storage).
  TrackedBuffer& gradient_memory() { return grads_memory_; }
  // The buffer behind params() when the model owns it (empty for given storage).
  TrackedBuffer& parameter_memory() { return params_memory_; }
  // The fp32 master weights' buffer (mixed precision, owned; empty in fp32).
  TrackedBuffer& master_memory() { return master_memory_; }
  // Rounds fp32 values into the 16-bit storage (a ZeRO-3 shard's); fp32: copies.
  void narrow_to_storage(std::span<const float> in, S* out) const;
  // The tensors this rank holds (empty ones left out), in storage order; param is the fp32 master.
  std::vector<ParameterView> parameter_views();
  // The same for optimizers; `replica` marks a tp-replicated tensor on tp ranks > 0 and the
  // head stage's copy of wte when the embedding is on another stage.
  std::vector<optim::ParameterSlice> parameter_slices();
  // For naming where a non-finite value first appeared (core/finite_scan.hpp), in forward order,
  // each (L, ...) tensor cut per block with global block numbers ("blocks.3.fch"): the fp32
  // activations of slot's last forward (16-bit storage lists only its fp32 statistics and
  // losses; empty before any forward), and the parameter gradients.
  std::vector<NamedValues> forward_values(std::int64_t slot);
  std::vector<NamedValues> gradient_values();

 private:
  // ZeRO-3: holds a unit's weights gathered for as long as it lives (nothing without a gather);
  // `next` is prefetched. w() maps a weight pointer into params() to where the gather put it.
  class HeldUnit {
   public:
    HeldUnit(GptModelT& model, Unit unit, std::int64_t l, std::optional<std::pair<Unit, std::int64_t>> next);
    HeldUnit(const HeldUnit&) = delete;
    HeldUnit& operator=(const HeldUnit&) = delete;
    ~HeldUnit();
    const S* w(const S* in_params) const;

   private:
    UnitParameterGather* gather_;
    const S* params_base_;
    const S* gathered_ = nullptr;
    std::vector<FlatRange> ranges_;
  };

  // One micro-batch's activations and inputs.
  struct Slot {
    std::byte* base = nullptr;  // activations of this slot: slot bytes from here
    ActivationTensorsT<S> acts{};
    std::int32_t* tokens = nullptr;   // (B, T)
    std::int32_t* targets = nullptr;  // (B, T)
    std::int64_t B = 0, T = 0;
    bool forwarded = false;    // forward done, backward not yet
    bool has_targets = false;  // the head stage's forward had targets
  };

  // One block's activations: views into a slot's (L, ...) tensors at layer l or, for a tensor
  // the recompute mode drops, into the shared recompute scratch.
  struct BlockActivations {
    S* ln1;           // (B, T, C)
    float* ln1_mean;  // (B, T)
    float* ln1_rstd;  // (B, T)
    S* qkv;           // (B, T, 3C)
    S* att;           // (B, NH, T, T)
    S* atty;          // (B, T, C)
    S* attproj;       // (B, T, C)
    S* residual2;     // (B, T, C)
    S* ln2;           // (B, T, C)
    float* ln2_mean;  // (B, T)
    float* ln2_rstd;  // (B, T)
    S* fch;           // (B, T, 4C)
    S* fch_gelu;      // (B, T, 4C)
    S* fcproj;        // (B, T, C)
  };
  BlockActivations block_activations(const Slot& slot, std::int64_t l) const;
  // Points recomputed_ into recompute_memory_ for (B, T) (the placeholder when only recording).
  void point_recompute_scratch(std::int64_t B, std::int64_t T);
  // Block l's forward from its input residual (B, T, C) into b; writes its output into
  // residual_out, or with residual_out nullptr (a recomputation in the backward) stops before it.
  // Its weights are read through `held` (the block's ZeRO-3 gather, or params() without one).
  void forward_block(std::int64_t l, const BlockActivations& b, const S* residual, S* residual_out,
                     std::int64_t B, std::int64_t T, const HeldUnit& held);
  std::size_t flat_size() const { return static_cast<std::size_t>(parameter_count_ + appended_parameters_); }
  std::size_t appended_size() const { return static_cast<std::size_t>(appended_parameters_); }
  Slot& slot_at(std::int64_t slot);
  // forward_stage, and with lm_head false forward_hidden (stops after the final LayerNorm)
  float forward_slot(std::int64_t slot, const std::int32_t* tokens, const S* input, const std::int32_t* targets,
                     std::int64_t B, std::int64_t T, bool lm_head);
  // backward_stage, and with dhidden backward_hidden (the head stage starts from d(lnf))
  void backward_slot(std::int64_t slot, const S* doutput, const S* dhidden);
  void tp_all_reduce_sum(S* data, std::int64_t count);
  // Sequence parallelism's collectives over the tp group (no-ops when only recording):
  // the (BT, C) rows of every rank: mine itself without sequence parallelism, else this rank's
  // rows (R = BT/t, C) of every rank gathered into all and returned; and the sum of every
  // rank's partial (BT, C) rows, this rank's R of them into mine.
  const S* tp_all_gather_rows(S* all, const S* mine, std::int64_t BT);
  void tp_reduce_scatter_rows(S* mine, const S* partial, std::int64_t BT);
  // Where a row-parallel linear (or the vocabulary-parallel lookup) writes its partial sums for
  // out: the scratch under sequence parallelism (then reduce-scattered into out), else out
  // itself (then all-reduced); sum_partial_rows does the one or the other.
  S* partial_rows_target(S* out, S* scratch) const { return shard_.sequence_parallel ? scratch : out; }
  void sum_partial_rows(S* out, const S* partial, std::int64_t BT);

  GptConfig config_;
  GptShard shard_;
  TensorParallelGroup tp_;
  kernels::Backend backend_;
  Device device_;  // where every buffer below lives: the backend's memory
  kernels::StorageKernels<S> k_;
  std::int64_t max_batch_, max_seq_len_, parameter_count_, appended_parameters_;
  double loss_scale_ = 1.0;

  TrackedBuffer params_memory_;       // params: the weights the kernels read (S)
  TrackedBuffer master_memory_;       // optimizer: fp32 master weights (16-bit S only)
  TrackedBuffer grads_memory_;        // grads (float)
  TrackedBuffer acts_memory_;         // activations: activation_slots sets
  TrackedBuffer inputs_memory_;       // activations: tokens and targets, int32 (slots, 2, B, T)
  TrackedBuffer recompute_memory_;    // activations: one block's recomputed tensors, all slots'
  TrackedBuffer acts_grads_memory_;   // workspace
  TrackedBuffer tp_widened_memory_;   // comm: a 16-bit tp all-reduce's float copy (B, T, C),
                                      // and under sequence parallelism its scattered rows
  ParameterTensorsT<S> params_{};
  ParameterTensors master_{};  // params_ itself in fp32
  ParameterTensors grads_{};
  std::vector<Slot> slots_;
  ActivationTensorsT<S> recomputed_{};  // views into recompute_memory_ at the current (B, T)
  ActivationGradientsT<S> acts_grads_{};
  const S* input_gradient_ = nullptr;  // (B, T, C) in acts_grads_memory_
  std::vector<float> host_staging_;     // device runs: losses read back, dlosses and weights staged
  // A record-only model's views all point here: passed to the kernels, never read or written.
  alignas(64) std::array<std::byte, 64> recording_placeholder_{};
  GradientReadyCallback gradient_ready_;
  UnitParameterGather* unit_gather_ = nullptr;
};

using GptModel = GptModelT<float>;
extern template class GptModelT<float>;
extern template class GptModelT<bf16>;
extern template class GptModelT<fp16>;

}  // namespace sb::gpt
