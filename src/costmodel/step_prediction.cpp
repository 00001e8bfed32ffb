// SPDX-License-Identifier: Apache-2.0
// The analytic step model of step_prediction.hpp. Every formula it applies lives in
// closed_forms.hpp or the model sources; this file decides which applies where (stages, link
// levels, overlap), how much memory traffic the non-GEMM work makes, and hands the per-op costs
// to the event simulation (step_simulation.hpp), whose step time it reports. Under
// interleaving every cost is per model chunk (the plan's pp·v), a rank's memory the sum over its
// chunks, and the simulation runs the interleaved order.
#include "costmodel/step_prediction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <numeric>
#include <vector>

#include "core/check.hpp"
#include "costmodel/closed_forms.hpp"
#include "costmodel/exchange_work.hpp"
#include "costmodel/gemm_model.hpp"
#include "costmodel/kernel_calls.hpp"
#include "costmodel/model_description.hpp"
#include "costmodel/nccl_collectives.hpp"
#include "costmodel/step_simulation.hpp"
#include "costmodel/tp_overlap.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "plan/pipeline_schedule.hpp"

namespace sb::costmodel {

namespace {

using i64 = std::int64_t;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What one rank of a pipeline stage holds and does for one micro-batch.
struct StageCost {
  double executed_flops = 0;     // forward + backward + recomputation, this rank's tp share
  double forward_flops = 0;      // the forward's part of executed_flops
  double elementwise_bytes = 0;  // memory traffic of the non-GEMM work, this rank
  double forward_elementwise_bytes = 0;  // the forward's part of elementwise_bytes
  double parameters = 0;         // this rank's share
  double activation_bytes = 0;   // kept for the backward, one micro-batch
  double boundary_bytes = 0;     // the p2p message to the next stage (and its gradient back)
  i64 tp_all_reduces = 0;        // per micro-batch
  i64 forward_tp_all_reduces = 0;  // the forward's part of tp_all_reduces
  // per micro-batch, in the backward: all-gathers without their pair's reduce-scatter (an
  // early-stopped recomputation's MLP under sequence parallelism)
  i64 recomputed_lone_all_gathers = 0;
  i64 in_flight = 1;             // micro-batches whose activations are held at once
  // The trainer's layout: activations in a pool per chunk sized by that chunk's own peak in
  // flight (so a rank holds the sum over its chunks). Else (Korthikanti et al.'s count, the
  // layouts the trainer does not build) a framework that allocates as it goes, which holds the
  // peak over time of what is in flight.
  bool pooled_activations = false;
  std::size_t unit_begin = 0, unit_end = 0;  // its pipeline units [begin, end) of the description
  double shared_activation_bytes = 0;  // held once whatever the micro-batches in flight (scratch)
  // this rank's share of the stage's largest unit (an embedding, a block, a head): under ZeRO-3
  // the units are gathered whole one after another, so it sizes the gather buffers
  double largest_unit_parameters = 0;
  // the loss's bytes beside the kept softmax while it runs (the last stage): held once, and not
  // while a block's backward holds the recompute scratch
  double loss_working_bytes = 0;
  double buffer_bytes = 0;             // model state beside the parameters (BatchNorm running statistics)
  // the GEMMs' seconds on a site with a shape-aware GEMM model (site.gemm), per micro-batch:
  // all of them (forward, backward, recomputation) and the forward's
  std::optional<double> gemm_s, forward_gemm_s;
};

// Parameter, gradient and optimizer bytes per parameter: 16-bit weights, fp32 main gradients
// (the trainer, Megatron-LM) or 16-bit ones (precision.main_grads storage: ZeRO's 2, 2, K).
struct StateBytes {
  double param, grad, optimizer;
};
StateBytes state_bytes(const plan::TrainConfig& c, double element_bytes) {
  const bool mixed = element_bytes < 4;
  const double master = mixed ? 4.0 : 0.0;  // fp32 master weights beside 16-bit ones
  const double moments = c.optimizer.type == "adamw" ? 8.0 : 4.0;  // m and v, or momentum
  const double grad = c.precision.main_grads == "storage" ? element_bytes : 4.0;
  return {element_bytes, grad, master + moments};
}

// Bytes the optimizer reads and writes per parameter: the gradient, each fp32 state read and
// written, and the 16-bit copy of the updated weight in mixed precision.
double optimizer_bytes_per_parameter(const plan::TrainConfig& c, double element_bytes) {
  const StateBytes s = state_bytes(c, element_bytes);
  const double fp32_weights = element_bytes < 4 ? s.optimizer : s.optimizer + 4.0;
  return s.grad + 2.0 * fp32_weights + (element_bytes < 4 ? element_bytes : 0.0);
}

// The activation bytes as this trainer lays them out and tracks them (models/gpt/gpt.hpp): per
// micro-batch the slot's tensors in the storage type, fp32 statistics, the tokens and targets;
// once, the recompute scratch (one block's dropped tensors). What `train` measures, and more
// than Korthikanti et al.'s count of what a Megatron layer must keep, so the prediction of a run
// this trainer makes is the run's memory.
struct TrainerActivationBytes {
  double slot = 0, shared = 0;
};
TrainerActivationBytes trainer_activation_bytes(const gpt::GptConfig& g, const ModelDescription& d, i64 tp,
                                                i64 block_begin, i64 blocks, bool first, bool last,
                                                Recompute recompute, bool sequence_parallel) {
  gpt::GptPartition partition;
  partition.layer_begin = block_begin;
  partition.layer_end = block_begin + blocks;
  partition.embedding = first;
  partition.head = last;
  partition.tp.size = static_cast<int>(tp);
  partition.recompute = recompute;
  partition.sequence_parallel = sequence_parallel;
  const gpt::GptShard shard = gpt::gpt_shard_shape(g, partition);
  const i64 B = d.micro_batch, T = d.seq_len;
  const bool fp32 = d.element_bytes == 4.0;
  const i64 tensors = fp32 ? gpt::gpt_shard_activation_bytes<float>(shard, B, T).total
                           : gpt::gpt_shard_activation_bytes<bf16>(shard, B, T).total;
  const i64 scratch = fp32 ? gpt::gpt_shard_recompute_scratch_bytes<float>(shard, B, T).total
                           : gpt::gpt_shard_recompute_scratch_bytes<bf16>(shard, B, T).total;
  return {static_cast<double>(tensors + 2 * B * T * static_cast<i64>(sizeof(std::int32_t))),
          static_cast<double>(scratch)};
}

// The bytes one block's fp8 casts move on one tp rank: 4 per element of each linear layer's
// input in the forward and of its output gradient in the backward; none outside fp8.
struct FpEightCasts {
  double forward_bytes = 0, backward_bytes = 0;
};
FpEightCasts fp8_casts(const plan::TrainConfig& c, const gpt::GptConfig& g, i64 micro_batch, i64 seq_len) {
  FpEightCasts casts;
  if (c.precision.dtype != "fp8") return casts;
  for (const GemmShape& s : gpt_block_linear_gemms(g, micro_batch, seq_len, c.strategy.tp)) {
    casts.forward_bytes += 4.0 * s.m * s.k;
    casts.backward_bytes += 4.0 * s.m * s.n;
  }
  return casts;
}

// Bytes per logit of the loss (model.cross_entropy): kept for its backward per micro-batch, held
// beside them while it runs, and moved (forward and backward; the forward's part).
//   fused (Megatron-LM): the upcast logits normalised in place into the fp32 softmax (kept); the
//     16-bit logits beside it in the forward and their 16-bit gradient in the backward (none in
//     fp32, where upcast and gradient are in place); a pass writing the softmax, then reading it
//     and writing the gradient.
//   unfused (PyTorch's F.cross_entropy(logits.float())), counted as PyTorch's caching allocator
//     reserves it: a buffer freed stays in its cache and serves a later request only if that is
//     no larger, so the 16-bit logits' block (2 bytes, freed after the forward) stays reserved
//     beside the backward's 4-byte buffers.
//     - one tp rank (ATen's log_softmax and nll_loss kernels): the fp32 log-softmax kept; the
//       backward's gradient of its output and of its input beside it (8, + 2 cached in 16-bit);
//       the forward reads the 16-bit logits, writes the fp32 copy, reads it twice and writes the
//       log-softmax (2+4+8+4), the backward writes the output's gradient, reads it and the
//       log-softmax, writes the input's gradient and casts it back (4+12+4+2, or 4+12 in fp32).
//     - tp > 1 (torch.distributed.tensor.parallel.loss_parallel, the loss on the
//       vocabulary-parallel logits decomposed into element-wise ops): the forward writes the fp32
//       copy, the shifted logits, their exp and the log-softmax (kept); the backward a zeroed
//       gradient, exp(log-softmax), their sum and its product with the loss's gradient: 12
//       beside the kept 4 (+ 2 cached in 16-bit); passes 2+4, 4, 8, 8, 4, 8 forward and 4, 8,
//       12, 8, 4+2 backward (no casts in fp32).
struct LossBytes {
  double kept, working, traffic, forward_traffic;
};
LossBytes loss_bytes(const std::string& cross_entropy, double element_bytes, bool vocabulary_parallel) {
  const bool sixteen_bit = element_bytes < 4.0;
  if (cross_entropy == "unfused" && vocabulary_parallel)
    return sixteen_bit ? LossBytes{4.0, 14.0, 76.0, 38.0} : LossBytes{4.0, 12.0, 64.0, 32.0};
  if (cross_entropy == "unfused")
    return sixteen_bit ? LossBytes{4.0, 10.0, 40.0, 18.0} : LossBytes{4.0, 8.0, 28.0, 12.0};
  return {4.0, sixteen_bit ? element_bytes : 0.0, 12.0, 4.0};
}

// ZeRO-3 under pipeline parallelism is FSDP under torch.distributed.pipelining (Megatron-LM's
// pipelines shard no parameters): each chunk's parameters gathered once a step and held, their
// whole gradient accumulated over the micro-batches (add_parameter_gathers times it,
// predict_memory counts it), and PipelineStage's buffers (below).
bool torch_pipelining(const plan::TrainConfig& c) { return c.strategy.zero >= 3 && c.strategy.pp > 1; }

// PipelineStage's receive buffers, allocated for every micro-batch of the step when the schedule
// starts and held through it (_prepare_forward_infra, _prepare_backward_infra): a stage after
// the first receives each micro-batch's input, a stage before the last each one's output
// gradient, each the size of the boundary it crosses.
double pipelining_receive_buffer_bytes(const std::vector<StageCost>& stages, std::size_t stage, i64 micro_batches) {
  const double m = static_cast<double>(micro_batches);
  return (stage > 0 ? m * stages[stage - 1].boundary_bytes : 0.0) +
         (stage + 1 < stages.size() ? m * stages[stage].boundary_bytes : 0.0);
}

// The GEMM of a block's linear layers (gpt_block_linear_gemms) that its recomputed forward leaves
// out under strategy.recompute_early_stop: the last (the MLP's down projection), whose output only
// the residual add reads, so no backward needs it rebuilt. The element-wise passes are counted as
// for a whole forward: the skipped residual add is one (b, s, C) write of the block's dozen.
std::optional<GemmShape> early_stop_skipped_gemm(const plan::TrainConfig& c,
                                                 const std::vector<GemmShape>& block_linear_gemms) {
  if (!c.strategy.recompute_early_stop) return std::nullopt;
  return block_linear_gemms[kGptBlockLinearGemms - 1];
}

std::vector<StageCost> gpt_stages(const plan::TrainConfig& c, const plan::RunPlan& plan, const ModelDescription& d,
                                  Recompute recompute) {
  const auto& s = c.strategy;
  const gpt::GptConfig& g = d.gpt;
  const double t = static_cast<double>(s.tp), b = static_cast<double>(d.micro_batch);
  const double T = static_cast<double>(d.seq_len), C = static_cast<double>(g.channels);
  const double V = static_cast<double>(g.vocab);
  const std::vector<i64>& sizes = plan.stages;
  const double block_forward = gpt::gpt_block_forward_flops(g, d.micro_batch, d.seq_len);
  const std::optional<GemmShape> skipped =  // the whole block's (tp 1), as block_forward
      early_stop_skipped_gemm(c, gpt_block_linear_gemms(g, d.micro_batch, d.seq_len, 1));
  const double block_recompute =
      recompute == Recompute::full ? block_forward - (skipped ? skipped->flops() : 0.0)
      : recompute == Recompute::selective ? gpt::gpt_block_attention_core_forward_flops(g, d.micro_batch, d.seq_len)
                                          : 0.0;
  const double a = static_cast<double>(g.heads), scale = d.element_bytes / 2.0;
  const bool flash = c.model.attention == "flash";
  const BlockActivationTerms terms = gpt_block_activation_terms(g);  // the block's kept tensors
  // PyTorch's tensor parallelism (DTensor, with cross_entropy unfused) keeps the all-gathered
  // outputs of the two norms its column-parallel linears take (the attention's and the MLP's
  // input, (b, s, C) each) where Megatron-LM's sequence parallelism keeps their shards and gathers
  // them again in the backward: kept by each block, or held by the block being recomputed
  const bool pytorch_tp = c.model.cross_entropy == "unfused" && s.tp > 1 && s.sequence_parallel;
  const double sequence_bytes = b * T * C * d.element_bytes;  // one (b, s, C) tensor, whole
  const double gathered_norm_outputs = pytorch_tp ? 2.0 * sequence_bytes * (1.0 - 1.0 / t) : 0.0;
  const double block_activations =
      activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, recompute, flash, terms) * scale +
      (recompute == Recompute::full ? 0.0 : gathered_norm_outputs);
  // The non-GEMM work (LayerNorm, softmax, GELU, dropout, residuals) is bound by memory: its
  // forward writes the tensors Korthikanti et al. count, the backward reads them and writes
  // their gradients (3 passes), and each recomputed forward writes them again. The fused
  // attention kernel makes no passes over the T² scores.
  const double written =
      activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, Recompute::none, flash, terms) * scale;
  const double recomputed =
      recompute == Recompute::full ? written
      : recompute == Recompute::selective
          ? written - activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, Recompute::selective, flash, terms) * scale
          : 0.0;
  // fp8: each linear layer's input (forward) and output gradient (backward) cast to fp8 with its
  // transpose, one pass reading bf16 and writing both (2 + 1 + 1 bytes an element); the weights'
  // casts, made once a step and kept over the micro-batches, are left out
  const FpEightCasts casts = fp8_casts(c, g, d.micro_batch, d.seq_len);
  const double block_traffic = 3.0 * written + recomputed + casts.backward_bytes +
                               casts.forward_bytes * (recompute == Recompute::full ? 2.0 : 1.0);
  // A recomputed block's forward writes its dropped tensors again just before its backward reads
  // them: one block's worth, held once whatever the micro-batches in flight.
  const double recompute_scratch =
      recompute == Recompute::none ? 0.0 : written + gathered_norm_outputs - block_activations;
  const double block_parameters = static_cast<double>(gpt::gpt_block_parameter_count(g)) / t;
  const double vocabulary_parameters = V * C / t;  // wte's (and an untied head's) tp share
  const double embedding_parameters =  // wte's share and wpe (gpt2 only), replicated
      vocabulary_parameters + static_cast<double>(gpt::gpt_embedding_parameter_count(g)) - V * C;
  std::vector<StageCost> stages;
  i64 block_begin = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool first = i == 0, last = i + 1 == sizes.size();
    const double blocks = static_cast<double>(sizes[i]);
    StageCost st;
    double forward = blocks * block_forward;
    st.parameters = blocks * block_parameters;
    st.activation_bytes = blocks * block_activations;
    st.shared_activation_bytes = blocks > 0 ? recompute_scratch : 0.0;
    st.largest_unit_parameters = blocks > 0 ? block_parameters : 0.0;
    if (first) st.largest_unit_parameters = std::max(st.largest_unit_parameters, embedding_parameters);
    if (last && (gpt::gpt_llama_style(g) || s.pp > 1))  // an untied head, or the tied wte's copy
      st.largest_unit_parameters = std::max(st.largest_unit_parameters, vocabulary_parameters);
    st.elementwise_bytes = blocks * block_traffic;
    st.forward_elementwise_bytes = blocks * (written + casts.forward_bytes);
    // the recomputed forward's two; under recompute_early_stop the collective after the skipped
    // down projection is not rerun either: without sequence parallelism the MLP's all-reduce, with
    // it its reduce-scatter, the MLP's all-gather (before its input GEMM) running alone
    const bool early_stopped = recompute == Recompute::full && skipped;
    const i64 recomputed_reductions = recompute != Recompute::full ? 0 : early_stopped ? 1 : 2;
    st.tp_all_reduces = sizes[i] * (4 + recomputed_reductions);
    st.recomputed_lone_all_gathers = early_stopped && s.sequence_parallel ? sizes[i] : 0;
    st.forward_tp_all_reduces = sizes[i] * 2;  // after attention and after the MLP
    if (first) {
      // wte vocabulary-parallel, wpe (gpt2 only) replicated; the embedding's output is all-reduced
      st.parameters += embedding_parameters;
      st.tp_all_reduces += 1;
      st.forward_tp_all_reduces += 1;
    }
    if (last) {
      forward += gpt::gpt_head_forward_flops(g, d.micro_batch, d.seq_len);
      st.parameters += static_cast<double>(gpt::gpt_final_layernorm_parameter_count(g));
      if (gpt::gpt_llama_style(g)) st.parameters += static_cast<double>(gpt::gpt_head_parameter_count(g)) / t;
      else if (s.pp > 1) st.parameters += vocabulary_parameters;  // the tied wte's copy on the last stage
      const LossBytes loss = loss_bytes(c.model.cross_entropy, d.element_bytes, s.tp > 1);
      const double logits = b * T * V / t;  // this rank's, vocabulary-parallel
      st.activation_bytes += logits * loss.kept;
      // the final norm's and the head's inputs, kept outside any recomputed block: sharded over
      // the sequence under sequence parallelism, but for the head's under PyTorch's tensor
      // parallelism, whose column-parallel head keeps its all-gathered input
      const double sharded_input = s.sequence_parallel ? sequence_bytes / t : sequence_bytes;
      st.activation_bytes += sharded_input + (pytorch_tp ? sequence_bytes : sharded_input);
      st.loss_working_bytes = logits * loss.working;
      st.elementwise_bytes += logits * loss.traffic;
      st.forward_elementwise_bytes += logits * loss.forward_traffic;
    }
    st.executed_flops = (3.0 * forward + blocks * block_recompute) / t;
    st.forward_flops = forward / t;  // recomputation runs inside the backward
    // Megatron-LM's scatter/gather: each tp rank sends its 1/t of the (b, s, C) boundary
    st.boundary_bytes = sequence_bytes / t;
    // torch.distributed.pipelining keeps each micro-batch's stage output for its backward
    // (PipelineStage.fwd_cache), one boundary more per micro-batch in flight before the last
    // stage; after the first, the first block's kept input is its receive buffer (counted with
    // the buffers), one boundary less
    if (torch_pipelining(c)) st.activation_bytes += (last ? 0.0 : st.boundary_bytes) - (first ? 0.0 : st.boundary_bytes);
    // the trainer's layout (Llama-style blocks are not the trainer's: they keep Korthikanti et
    // al.'s count for their own block, gpt_block_activation_terms)
    if (g.block == gpt::GptBlock::gpt2 && !flash) {
      const TrainerActivationBytes held =
          trainer_activation_bytes(g, d, s.tp, block_begin, sizes[i], first, last, recompute, s.sequence_parallel);
      st.activation_bytes = held.slot;
      st.shared_activation_bytes = held.shared;
      st.loss_working_bytes = 0;  // the trainer's logits and probabilities are in held.slot
      st.pooled_activations = true;
    }
    st.unit_begin = first ? 0 : static_cast<std::size_t>(1 + block_begin);
    st.unit_end = static_cast<std::size_t>(1 + block_begin + sizes[i] + (last ? 1 : 0));
    block_begin += sizes[i];
    stages.push_back(st);
  }
  return stages;
}

// Under full recomputation (recompute full) a block keeps its output; its forward runs again
// before its backward, writing its tensors again into a scratch held once (the largest block's).
std::vector<StageCost> resnet_stages(const plan::RunPlan& plan, const ModelDescription& d, Recompute recompute) {
  const std::vector<i64>& sizes = plan.stages;
  const bool full = recompute == Recompute::full;
  std::vector<StageCost> stages;
  std::size_t unit = 0;
  for (i64 size : sizes) {
    StageCost st;
    st.unit_begin = unit;
    st.unit_end = unit + static_cast<std::size_t>(size);
    double forward = 0, recomputed = 0, largest_dropped = 0;
    for (i64 k = 0; k < size; ++k, ++unit) {
      const UnitCost& u = d.units[unit];
      const bool block = unit != 0 && unit + 1 != d.units.size();
      forward += u.forward_flops();
      st.parameters += u.parameters();
      st.largest_unit_parameters = std::max(st.largest_unit_parameters, u.parameters());
      st.activation_bytes += full && block ? u.output_bytes : u.activation_bytes();
      if (full && block) {
        recomputed += u.forward_flops();
        largest_dropped = std::max(largest_dropped, u.activation_bytes() - u.output_bytes);
      }
      // BatchNorm, ReLU, pools, residual adds: forward write, backward read and gradient write,
      // and a recomputed block's forward writes again
      st.elementwise_bytes += (full && block ? 4.0 : 3.0) * u.activation_bytes();
      st.boundary_bytes = u.output_bytes;
    }
    st.shared_activation_bytes = largest_dropped;
    st.pooled_activations = true;  // the ResNets' layout is the trainer's
    st.executed_flops = 3.0 * forward + recomputed;
    st.forward_flops = forward;
    st.forward_elementwise_bytes = st.elementwise_bytes / 3.0;
    for (std::size_t u = st.unit_begin; u < st.unit_end; ++u)
      for (const LayerCost& layer : d.units[u].layers) st.buffer_bytes += layer.buffers * 4.0;  // fp32
    if (resnet_kernel_calls_known(d.resnet)) {
      // the trainer's layout (models/resnet/resnet.hpp): one slot's tensors in the storage type,
      // fp32 statistics, the labels; the shortcut scratch once
      const resnet::ResnetPartition part{static_cast<i64>(st.unit_begin),
                                         st.unit_end == d.units.size() ? resnet::kResnetAllUnits
                                                                       : static_cast<i64>(st.unit_end)};
      const auto bytes = [&](i64 slots) {
        return d.element_bytes == 4.0
                   ? resnet::resnet_activation_bytes<float>(d.resnet, d.micro_batch, part, slots, recompute)
                   : resnet::resnet_activation_bytes<bf16>(d.resnet, d.micro_batch, part, slots, recompute);
      };
      const double slot = static_cast<double>(bytes(2) - bytes(1));
      st.activation_bytes = slot + static_cast<double>(d.micro_batch) * 4.0;
      st.shared_activation_bytes = static_cast<double>(bytes(1)) - slot;
    }
    stages.push_back(st);
  }
  return stages;
}

// One micro-batch's forward and backward seconds on one rank of a stage, and the optimizer's,
// from the site's kernel times: the sum of the kernel calls the trainer's model makes, as
// recorded from it (kernel_calls.hpp). Nothing when the site has no times for this precision and
// devices per rank, or a kernel was never timed, or the model is one the trainer does not run.
struct TimedStage {
  double forward_s = 0, backward_s = 0;
  std::vector<i64> parameter_tensors;  // the stage's optimizer tensors (KernelCalls)
};

KernelCalls stage_kernel_calls(const StageCost& st, const ModelDescription& d, const plan::TrainConfig& c) {
  if (d.family == ModelFamily::resnet)
    return resnet_stage_kernel_calls(d.resnet, st.unit_begin, st.unit_end, d.micro_batch, c.precision.dtype,
                                     recompute_from_string(c.strategy.recompute));
  // units: the embedding, the blocks, the head
  const bool first = st.unit_begin == 0, last = st.unit_end == d.units.size();
  const i64 blocks = static_cast<i64>(st.unit_end - st.unit_begin) - (first ? 1 : 0) - (last ? 1 : 0);
  return gpt_stage_kernel_calls(d.gpt, c.strategy.tp, blocks, first, last, d.micro_batch, d.seq_len,
                                c.precision.dtype, recompute_from_string(c.strategy.recompute),
                                c.strategy.sequence_parallel && c.strategy.tp > 1);
}

std::optional<double> timed_seconds(const std::vector<KernelCall>& calls, const KernelProfile& times,
                                    const std::string& precision, int devices, int ranks) {
  double sum = 0;
  for (const KernelCall& call : calls) {
    const std::optional<double> seconds = times.seconds(call, precision, devices, ranks);
    if (!seconds && negligible_kernel_call(call)) continue;  // per-channel work an older table lacks
    if (!seconds) return std::nullopt;
    sum += *seconds;
  }
  return sum;
}

std::optional<std::vector<TimedStage>> timed_stages(const std::vector<StageCost>& stages, const ModelDescription& d,
                                                    const plan::TrainConfig& c, const KernelProfile& times,
                                                    int devices, int ranks) {
  const std::string& precision = c.precision.dtype;
  // each model's recorded backward holds its recomputed calls
  if (!times.covers(precision, devices, ranks)) return std::nullopt;
  if (d.family == ModelFamily::resnet && !resnet_kernel_calls_known(d.resnet)) return std::nullopt;
  if (d.family == ModelFamily::gpt && d.gpt.block != gpt::GptBlock::gpt2) return std::nullopt;  // not the trainer's
  if (c.model.attention != "unfused") return std::nullopt;  // the trainer's attention is unfused
  if (c.strategy.recompute_early_stop) return std::nullopt;  // the trainer reruns a block's whole forward
  std::vector<TimedStage> timed;
  for (const StageCost& st : stages) {
    const KernelCalls calls = stage_kernel_calls(st, d, c);
    const std::optional<double> forward = timed_seconds(calls.forward, times, precision, devices, ranks);
    const std::optional<double> backward = timed_seconds(calls.backward, times, precision, devices, ranks);
    if (!forward || !backward) return std::nullopt;
    timed.push_back({*forward, *backward, calls.parameter_tensors});
  }
  return timed;
}

// The slowest owner's optimizer step: under ZeRO each dp rank steps the tensors' runs in its
// shard, and the step waits for the rank with the most (or the costliest) calls.
std::optional<double> timed_optimizer_seconds(const plan::TrainConfig& c, double parameters,
                                              const std::vector<i64>& tensors, int owners, double element_bytes,
                                              const KernelProfile& times, int devices, int ranks) {
  std::optional<double> slowest;
  for (int owner = 0; owner < owners; ++owner) {
    const std::optional<double> seconds =
        timed_seconds(optimizer_kernel_calls(c.optimizer.type, static_cast<i64>(parameters),
                                             owned_tensor_runs(tensors, owners, owner), static_cast<int>(element_bytes)),
                      times, c.precision.dtype, devices, ranks);
    if (!seconds) return std::nullopt;
    slowest = std::max(slowest.value_or(0.0), *seconds);
  }
  return slowest;
}

// A group of n ranks whose members sit `stride` world ranks apart (tp 1, dp tp, pp tp·dp:
// the grid's order) stays inside a node when it spans at most ranks_per_node ranks.
bool crosses_nodes(int stride, int n, int ranks_per_node) {
  return static_cast<i64>(stride) * n > ranks_per_node;
}


// The figures a prediction has before any model: the grid, the devices, what a rank computes on.
Prediction prediction_frame(const plan::TrainConfig& c, const SiteProfile& site, int devices,
                            const RankPlacement* placement) {
  Prediction p;
  const auto& s = c.strategy;
  p.dp = static_cast<int>(s.dp);
  p.tp = static_cast<int>(s.tp);
  p.pp = static_cast<int>(s.pp);
  p.devices = devices > 0 ? devices : static_cast<int>(s.world_size());
  p.precision = c.precision.dtype;
  p.model = c.model.name;
  p.placement_observed = placement != nullptr;
  p.ranks_per_node = placement ? std::max(1, placement->ranks_per_node) : site.devices_per_node;
  p.nodes = placement ? std::max(1, placement->nodes)
                      : static_cast<int>((static_cast<i64>(p.devices) + p.ranks_per_node - 1) / p.ranks_per_node);
  if (site.device_is_cpu_core) {
    // the trainer's threads: the case's `threads`, 0 = every core; ranks on a node share its cores
    const double ranks_per_node = static_cast<double>(std::min<i64>(p.devices, p.ranks_per_node));
    const double threads = c.threads > 0 ? static_cast<double>(c.threads) : site.devices_per_node;
    p.devices_per_rank = std::min(threads, site.devices_per_node / ranks_per_node);
  }
  p.memory_available = site.memory_bytes * p.devices_per_rank;
  p.gpt = !plan::trains_resnet(c);
  return p;
}

// The model at the plan's micro-batch, and what each of its pipeline stages holds and does.
struct StagedModel {
  ModelDescription description;
  std::vector<StageCost> stages;
};
StagedModel staged_model(const plan::TrainConfig& c, const plan::RunPlan& plan, double element_bytes,
                         Recompute recompute) {
  StagedModel m;
  if (plan.resnet) {
    m.description = describe_resnet(resnet::resnet_config_by_name(c.model.name), plan.micro_batch, element_bytes);
    m.stages = resnet_stages(plan, m.description, recompute);
  } else {
    m.description = describe_gpt(plan::gpt_config_of(c), plan.micro_batch, plan.seq_len, element_bytes);
    m.stages = gpt_stages(c, plan, m.description, recompute);
  }
  for (std::size_t i = 0; i < m.stages.size(); ++i) m.stages[i].in_flight = plan.stage_plans[i].in_flight;
  return m;
}

// How the blocks' linear layers run on a site with a shape-aware GEMM model: in fp8 at the fp8
// peak and e_max_fp8 with one-byte operands (Transformer Engine's recipe), else at the
// precision's peak and e_max.
struct LinearGemms {
  double peak, efficiency, element_bytes;
};
LinearGemms linear_gemms(const plan::TrainConfig& c, const SiteProfile& site, double element_bytes) {
  const bool fp8 = c.precision.dtype == "fp8";
  return {site.peak(fp8 ? "fp8" : c.precision.dtype), site.gemm->efficiency(c.precision.dtype, site.source),
          fp8 ? 1.0 : element_bytes};
}

// The GEMMs' seconds of each stage on a site with a shape-aware GEMM model: the GPT's GEMMs by
// their shapes (the backward's two per forward GEMM, a full recomputation's forward again, a
// selective one's attention core); a ResNet's FLOPs at e_max (its convolutions' shapes are not
// modelled). In fp8 the blocks' linear layers (forward, input and weight gradients) run at the
// fp8 peak and e_max_fp8 with one-byte operands, the attention core and the head in bf16 at e_max
// (Transformer Engine's FP8 recipe: its fp8 GEMMs are the linear layers').
void add_gemm_seconds(std::vector<StageCost>& stages, const plan::TrainConfig& c, const ModelDescription& d,
                      const SiteProfile& site, Recompute recompute) {
  if (!site.gemm) return;
  const GemmModel& g = *site.gemm;
  const bool fp8 = c.precision.dtype == "fp8";
  const double peak = site.peak(fp8 ? "bf16" : c.precision.dtype), bandwidth = site.memory_bandwidth;
  const double e = d.element_bytes;
  SB_USER_CHECK(!fp8 || d.family == ModelFamily::gpt, "{}: precision fp8 is modelled for the GPT's linear layers; "
                "the ResNet runs fp32, bf16 or fp16", c.source);
  if (d.family == ModelFamily::resnet) {
    for (StageCost& st : stages) {
      st.gemm_s = st.executed_flops / (peak * g.e_max);
      st.forward_gemm_s = st.forward_flops / (peak * g.e_max);
    }
    return;
  }
  const bool flash = c.model.attention == "flash";
  const LinearGemms linear = linear_gemms(c, site, e);
  const auto seconds = [&](const GemmShape& s) { return gemm_seconds(g, s, peak, bandwidth, e); };
  const auto linear_seconds = [&](const GemmShape& s) {
    return gemm_seconds_at(g, linear.efficiency, s, linear.peak, bandwidth, linear.element_bytes);
  };
  const auto forward_backward = [&](const std::vector<GemmShape>& gemms, std::size_t linears = 0) {
    std::pair<double, double> fb{0.0, 0.0};
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      const auto time = [&](const GemmShape& s) { return i < linears ? linear_seconds(s) : seconds(s); };
      fb.first += time(gemms[i]);
      for (const GemmShape& grad : gemm_backward(gemms[i])) fb.second += time(grad);
    }
    return fb;
  };
  const std::vector<GemmShape> block_linear_gemms =
      gpt_block_linear_gemms(d.gpt, d.micro_batch, d.seq_len, c.strategy.tp);
  const auto [linear_f, linear_b] = forward_backward(block_linear_gemms, kGptBlockLinearGemms);
  std::pair<double, double> core;  // the attention core's forward and backward
  if (flash) {
    const FusedAttentionSeconds f = gpt_fused_attention_seconds(g, d.gpt, d.micro_batch, d.seq_len, c.strategy.tp, peak);
    core = {f.forward, f.backward};
  } else {
    core = forward_backward(gpt_attention_core_gemms(d.gpt, d.micro_batch, d.seq_len, c.strategy.tp));
  }
  const auto [core_f, core_b] = core;
  const double block_f = linear_f + core_f, block_b = linear_b + core_b;
  const std::optional<GemmShape> skipped = early_stop_skipped_gemm(c, block_linear_gemms);
  const double block_r = recompute == Recompute::full        ? block_f - (skipped ? linear_seconds(*skipped) : 0.0)
                         : recompute == Recompute::selective ? core_f
                                                             : 0.0;
  const auto [head_f, head_b] = forward_backward({gpt_head_gemm(d.gpt, d.micro_batch, d.seq_len, c.strategy.tp)});
  for (StageCost& st : stages) {
    const bool first = st.unit_begin == 0, last = st.unit_end == d.units.size();
    const double blocks = static_cast<double>(st.unit_end - st.unit_begin) - (first ? 1 : 0) - (last ? 1 : 0);
    st.forward_gemm_s = blocks * block_f + (last ? head_f : 0.0);
    st.gemm_s = blocks * (block_f + block_b + block_r) + (last ? head_f + head_b : 0.0);
  }
}

// One GPT block's linear-layer GEMM seconds per micro-batch that strategy.tp_overlap runs the
// sequence-parallel pairs under: by the site's GEMM model, or at `flops_per_s` on a site without one.
TpOverlapWindows tp_overlap_windows(const plan::TrainConfig& c, const ModelDescription& d, const SiteProfile& site,
                                    double flops_per_s) {
  const std::vector<GemmShape> gemms = gpt_block_linear_gemms(d.gpt, d.micro_batch, d.seq_len, c.strategy.tp);
  const std::optional<LinearGemms> linear =
      site.gemm ? std::optional(linear_gemms(c, site, d.element_bytes)) : std::nullopt;
  const auto seconds = [&](const GemmShape& s) {
    if (!linear) return s.flops() / flops_per_s;
    return gemm_seconds_at(*site.gemm, linear->efficiency, s, linear->peak, site.memory_bandwidth,
                           linear->element_bytes);
  };
  const auto forward = [&](std::size_t i, std::size_t j) { return seconds(gemms[i]) + seconds(gemms[j]); };
  const auto backward = [&](std::size_t i, std::size_t j) {
    double t = 0;
    for (const std::size_t k : {i, j})
      for (const GemmShape& grad : gemm_backward(gemms[k])) t += seconds(grad);
    return t;
  };
  // QKV + projection, the MLP's two; the MLP's input GEMM alone
  return {forward(0, 1), forward(2, 3), backward(0, 1), backward(2, 3), seconds(gemms[2])};
}

// The peak over rank `rank`'s op order of the activations it holds when each forward adds its
// chunk's bytes and each backward frees them (an interleaved pipeline's chunks peak at
// different times, so this is below the sum of their own peaks).
double activation_peak_over_time(const plan::RunPlan& plan, const std::vector<StageCost>& stages, int pp,
                                 std::size_t rank) {
  double held = 0, peak = 0;
  for (const plan::PipelineOp& op :
       plan::pipeline_stage_ops(plan.schedule, pp, static_cast<int>(rank), plan.micro_batches, plan.interleave)) {
    const double bytes = stages[rank + static_cast<std::size_t>(op.chunk) * static_cast<std::size_t>(pp)].activation_bytes;
    held += op.kind == plan::PipelineOpKind::forward ? bytes : -bytes;
    peak = std::max(peak, held);
  }
  return peak;
}

// Memory per rank of the most loaded stage (ZeRO's sharding of the model state; under
// interleaving the sum over the rank's chunks, each holding its own micro-batches in flight, or
// for layouts the trainer does not build the peak over time; ZeRO-3's buffers as comm: two
// gathered copies and one whole gradient of the largest unit, or under pipeline parallelism,
// where the parameters stay gathered through the step (add_parameter_gathers), the rank's whole
// 16-bit parameters and their whole gradient accumulated over the micro-batches, with
// torch.distributed.pipelining's receive buffers); the reason when it exceeds what a rank's
// devices hold.
std::optional<std::string> predict_memory(Prediction& p, const plan::TrainConfig& c, const plan::RunPlan& plan,
                                          const std::vector<StageCost>& stages, const SiteProfile& site,
                                          double element_bytes) {
  const StateBytes bytes = state_bytes(c, element_bytes);
  const auto ranks = static_cast<std::size_t>(c.strategy.pp);
  // one chunk a rank: its own peak in flight is the peak over time, pooled or not
  const bool over_time = plan.interleave > 1 && !stages.empty() && !stages.front().pooled_activations;
  std::size_t heaviest = 0;
  std::vector<RankMemory> memory(ranks);
  // what a chunk holds once (its recompute scratch, or its loss's working bytes): the trainer's
  // pools hold each chunk's, a framework that allocates as it goes the largest of the rank's
  // chunks, as it runs one chunk's backward at a time
  std::vector<double> held_once(ranks, 0.0);
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const StageCost& st = stages[i];
    const ModelStateBytes states = zero_model_state_bytes(st.parameters, p.dp, static_cast<int>(c.strategy.zero),
                                                          bytes.param, bytes.grad, bytes.optimizer);
    RankMemory& rank = memory[i % ranks];
    rank.params += states.params + st.buffer_bytes;
    rank.grads += states.grads;
    rank.optimizer += states.optimizer;
    const double once = std::max(st.shared_activation_bytes, st.loss_working_bytes);
    rank.activations += (over_time ? 0.0 : static_cast<double>(st.in_flight) * st.activation_bytes) +
                        (st.pooled_activations ? once : 0.0);
    if (!st.pooled_activations) held_once[i % ranks] = std::max(held_once[i % ranks], once);
    if (c.strategy.zero >= 3 && p.dp > 1)
      rank.comm = torch_pipelining(c) ? rank.comm + st.parameters * (bytes.param + bytes.grad)
                                    : std::max(rank.comm, st.largest_unit_parameters * (2.0 * bytes.param + bytes.grad));
    if (torch_pipelining(c)) rank.comm += pipelining_receive_buffer_bytes(stages, i, plan.micro_batches);
  }
  for (std::size_t r = 0; r < ranks; ++r) memory[r].activations += held_once[r];
  for (std::size_t r = 0; over_time && r < ranks; ++r)
    memory[r].activations += activation_peak_over_time(plan, stages, static_cast<int>(ranks), r);
  for (std::size_t r = 0; r < ranks; ++r)
    if (memory[r].total() > memory[heaviest].total()) heaviest = r;
  p.memory = memory[heaviest];
  p.rank_memory = memory;
  if (p.memory.total() <= site.memory_bytes * p.devices_per_rank) return std::nullopt;
  return fmt::format("needs {:.1f} GiB per device on pipeline stage {} (params {:.1f}, grads {:.1f}, optimizer "
                     "{:.1f}, activations {:.1f}, comm {:.1f} GiB) but a {} has {:.1f} GiB",
                     p.memory.total() / kGiB, heaviest, p.memory.params / kGiB, p.memory.grads / kGiB,
                     p.memory.optimizer / kGiB, p.memory.activations / kGiB, p.memory.comm / kGiB, site.device,
                     site.memory_bytes * p.devices_per_rank / kGiB);
}

// How one communicator's collectives are timed: per NCCL algorithm from the site's published
// figures (the fastest, as NCCL's tuner picks), or the ring formula over the level's α/β.
struct GroupComm {
  LinkCost link;
  CollectiveGroup group;
  std::string level;  // link_level: "none", "intra_node" or "inter_node"
  const SiteProfile* site = nullptr;  // non-null: time by NCCL algorithm
  double seconds(parallel::Collective collective, double bytes) const {
    if (site) return nccl_collective(collective, bytes, group, *site->intra_node.nccl, *site->inter_node.nccl).seconds;
    switch (collective) {
      case parallel::Collective::reduce_scatter: return ring_reduce_scatter_seconds(bytes, group.ranks, link);
      case parallel::Collective::all_gather: return ring_all_gather_seconds(bytes, group.ranks, link);
      default: return ring_all_reduce_seconds(bytes, group.ranks, link);
    }
  }
  std::string algorithm(parallel::Collective collective, double bytes) const {
    if (group.ranks <= 1) return "";
    if (!site) return "ring-formula";
    return to_string(nccl_collective(collective, bytes, group, *site->intra_node.nccl, *site->inter_node.nccl).algorithm);
  }
  double send_seconds(double bytes) const {
    if (site) return nccl_p2p_seconds(bytes, group.nodes > 1 ? *site->inter_node.nccl : *site->intra_node.nccl);
    return p2p_seconds(bytes, link);
  }
};

// The links a run's groups use and the rates its compute runs at.
struct StepRates {
  double flops_per_s = 0, memory_speed = 0;
  GroupComm tp, dp, pp;
  std::string tp_algorithm;
  double tp_collective_s = 0;  // one tp all-reduce (or sequence-parallel pair) of a (b, s, C) activation
  double tp_all_gather_s = 0;   // the pair's all-gather alone (sequence parallelism)
};
// "none" for a group of one rank, else the link level its traffic crosses.
std::string link_level(int ranks, bool inter) { return ranks <= 1 ? "none" : inter ? "inter_node" : "intra_node"; }

GroupComm group_comm(const SiteProfile& site, int ranks_per_node, int stride, int ranks) {
  GroupComm g;
  const bool inter = crosses_nodes(stride, ranks, ranks_per_node);
  const SiteLink l = site.link(inter);
  g.link = LinkCost{l.bandwidth, l.latency, l.reduction};
  g.level = link_level(ranks, inter);
  g.group = collective_group(ranks, stride, ranks_per_node);
  if (!inter) g.group.nodes = 1;
  if (site.nccl_collectives()) g.site = &site;
  return g;
}
StepRates step_rates(const plan::TrainConfig& c, const Prediction& p, const SiteProfile& site,
                     const ModelDescription& d, double element_bytes) {
  StepRates r;
  r.flops_per_s = p.peak_flops * p.gemm_efficiency * p.devices_per_rank;
  r.memory_speed = site.memory_bandwidth * site.memory_efficiency.value_or(1.0) * p.devices_per_rank;
  r.tp = group_comm(site, p.ranks_per_node, 1, p.tp);
  r.dp = group_comm(site, p.ranks_per_node, p.tp, p.dp);
  // a pipeline send goes between two stages: over the network when the stages' ranks are on
  // different nodes
  r.pp = group_comm(site, p.ranks_per_node, p.tp * p.dp, p.pp);
  const bool pp_inter = crosses_nodes(p.tp * p.dp, std::min(p.pp, 2), p.ranks_per_node);
  r.pp.group = CollectiveGroup{2, pp_inter ? 2 : 1, p.ranks_per_node};
  r.pp.level = link_level(p.pp, pp_inter);
  const double tp_message = static_cast<double>(p.micro_batch * d.seq_len) *
                            (p.gpt ? static_cast<double>(d.gpt.channels) : 0.0) * element_bytes;
  // a sequence-parallel pair (reduce-scatter + all-gather) moves what the all-reduce moves
  if (c.strategy.sequence_parallel) {
    r.tp_all_gather_s = r.tp.seconds(parallel::Collective::all_gather, tp_message);
    r.tp_collective_s = r.tp.seconds(parallel::Collective::reduce_scatter, tp_message) + r.tp_all_gather_s;
  } else {
    r.tp_collective_s = r.tp.seconds(parallel::Collective::all_reduce, tp_message);
  }
  r.tp_algorithm = r.tp.algorithm(
      c.strategy.sequence_parallel ? parallel::Collective::all_gather : parallel::Collective::all_reduce, tp_message);
  return r;
}

// The data-parallel gradient reduction of a stage: buckets of strategy.bucket_mb, or one
// reduction of everything without overlap; ZeRO-1's one reduce-scatter after backward. ZeRO-2
// and 3 reduce every micro-batch's gradients in its backward (the trainer's ZeroSharding, as
// DeepSpeed and FSDP without no_sync do); FSDP under torch.distributed.pipelining once a step.
void add_gradient_buckets(StageOpCosts& op, const plan::TrainConfig& c, const Prediction& p, const StageCost& st,
                          double grad_bytes_per_parameter, const GroupComm& dp, const ExchangeWork& work) {
  if (p.dp <= 1) return;
  if (work.reduce_scatter_bytes > 0) {
    op.bucket_bytes.push_back(work.reduce_scatter_bytes);
    op.bucket_s.push_back(dp.seconds(parallel::Collective::reduce_scatter, work.reduce_scatter_bytes));
    op.buckets_after_backward = true;
    return;
  }
  const auto& s = c.strategy;
  op.buckets_every_micro_batch = s.zero >= 2 && !torch_pipelining(c);
  const double gradient_bytes = st.parameters * grad_bytes_per_parameter;
  const double bucket = s.overlap ? s.bucket_mb * 1024.0 * 1024.0 : gradient_bytes;
  const auto bucket_seconds = [&](double size) { return dp.seconds(parallel::Collective::all_reduce, size); };
  const double full_bucket_s = bucket_seconds(std::min(bucket, gradient_bytes));  // every bucket but the last
  for (double done = 0; done < gradient_bytes; done += bucket) {
    const double size = std::min(bucket, gradient_bytes - done);
    op.bucket_bytes.push_back(size);
    op.bucket_s.push_back(size == bucket || size == gradient_bytes ? full_bucket_s : bucket_seconds(size));
  }
}

// The exchange's passes over the gradients (exchange_work.hpp) at the rank's memory speed, and
// ZeRO-1 and 2's gather of the updated parameters after the optimizer.
void add_exchange_work(StageOpCosts& op, const ExchangeWork& work, const GroupComm& dp, double memory_speed) {
  op.backward_exchange_s = work.backward_bytes_per_micro_batch / memory_speed;
  op.last_backward_exchange_s = work.backward_bytes_per_step / memory_speed;
  op.finish_exchange_s = work.finish_bytes / memory_speed;
  op.after_optimizer_s = work.after_optimizer_bytes / memory_speed;
  if (work.after_optimizer_gather_bytes > 0)
    op.after_optimizer_s += dp.seconds(parallel::Collective::all_gather, work.after_optimizer_gather_bytes);
}

// ZeRO-3: every forward and every backward of a micro-batch gathers the stage's parameters
// from the dp ranks' shards, unit by unit (the embedding, each block, the head), each unit's
// gather prefetched behind the compute of the one before. What waits: the first unit's gather,
// and whatever of the rest the pass's compute does not cover. Under pipeline parallelism the
// gathers run once, in each chunk's first forward, the parameters held through the step, as FSDP
// runs under torch.distributed.pipelining (torchtitan: no resharding after forward or backward,
// the gradients reduced after the last micro-batch: add_gradient_buckets).
void add_parameter_gathers(StageOpCosts& op, const plan::TrainConfig& c, const Prediction& p, const StageCost& st,
                           double param_bytes_per_parameter, const GroupComm& dp) {
  if (c.strategy.zero < 3 || p.dp <= 1) return;
  const double units = std::max(1.0, static_cast<double>(st.unit_end - st.unit_begin));
  const double gather = dp.seconds(parallel::Collective::all_gather, st.parameters * param_bytes_per_parameter);
  const auto exposed = [&](double compute) {
    return gather / units + std::max(0.0, gather * (units - 1.0) / units - compute);
  };
  op.forward_gather_s = exposed(op.forward_compute_s + op.forward_tp_s);
  op.backward_gather_s = exposed(op.backward_compute_s + op.backward_tp_s);
  op.gathers_once = torch_pipelining(c);
}

// ZeRO-2 and 3 give the pages of each micro-batch's reduced gradients back to the system, and
// 16-bit main gradients those of each range added into them; the next backward faults them in
// again: the stage's fp32 gradient pages (what backward writes, whatever the main gradients'
// type) at the calibrated cost per byte.
void add_gradient_page_refaults(StageOpCosts& op, const plan::TrainConfig& c, const StageCost& st,
                                std::optional<double> seconds_per_byte) {
  const bool staged = c.strategy.zero >= 2 || c.precision.sixteen_bit_main_gradients();
  if (!staged || !seconds_per_byte) return;
  const double refault_s = st.parameters * 4.0 * *seconds_per_byte;
  op.backward_compute_s += refault_s;
  if (op.backward_compute_alone_s >= 0) op.backward_compute_alone_s += refault_s;
}

// A calibrated site times the trainer's kernel calls (with as many ranks busy on the node as
// this run puts there, where calibrate did so); otherwise FLOPs at the calibrated (or
// datasheet) efficiency and memory traffic at the memory bandwidth.
struct KernelTiming {
  int rank_devices = 1, node_ranks = 1;
  std::optional<std::vector<TimedStage>> stages;
  // The same calls timed alone on the node, where the busy ones are not: a pipeline's stages
  // take turns on a node, so part of each op runs with the others idle (step_simulation.hpp).
  std::optional<std::vector<TimedStage>> alone_stages;
};
KernelTiming kernel_timing(const plan::TrainConfig& c, const Prediction& p, const SiteProfile& site,
                           const StagedModel& m) {
  KernelTiming k;
  k.rank_devices = std::max(1, static_cast<int>(std::lround(p.devices_per_rank)));
  k.node_ranks = std::min(p.devices, p.placement_observed ? p.ranks_per_node
                                                         : std::max(1, site.devices_per_node / k.rank_devices));
  if (!site.kernel_times) return k;
  if (!site.kernel_times->covers(c.precision.dtype, k.rank_devices, k.node_ranks)) k.node_ranks = 1;
  k.stages = timed_stages(m.stages, m.description, c, *site.kernel_times, k.rank_devices, k.node_ranks);
  // without a pipeline a node's ranks all belong to one stage and always compute together: the
  // simulation would price every op at its busy cost, so the alone rows are not looked up
  if (k.stages && k.node_ranks > 1 && c.strategy.pp > 1)
    k.alone_stages = timed_stages(m.stages, m.description, c, *site.kernel_times, k.rank_devices, 1);
  return k;
}

// What giving a gradient page back and faulting it in again costs per byte: the kernel table's
// `page_refault` row, timed inside a backward (calibrate/backward_page_refault.hpp) with as many
// ranks faulting at once as this run puts on a node (they contend in the kernel and, on a virtual
// machine, the hypervisor), else the site's one-process figure (page_refault_s, per 4096 bytes,
// a loop that only touches the pages: a lower bound), else nothing.
std::optional<double> page_refault_seconds_per_byte(const plan::TrainConfig& c, const SiteProfile& site,
                                                    const KernelTiming& k) {
  constexpr double kBytes = 64.0 * 1024 * 1024;
  if (k.stages) {
    const KernelCall call{"page_refault", {static_cast<std::int64_t>(kBytes)}, kBytes, 0.0, 0.0};
    if (const std::optional<double> s =
            site.kernel_times->seconds(call, c.precision.dtype, k.rank_devices, k.node_ranks))
      return *s / kBytes;
  }
  if (site.page_refault_s) return *site.page_refault_s / 4096.0;
  return std::nullopt;
}

// Which stages share a node, for the simulation's load (the trainer's grid order: a stage's
// dp × tp ranks are consecutive world ranks, and nodes fill in rank order).
void share_nodes(StepSimulationInput& in, const Prediction& p, const KernelTiming& k) {
  if (!k.alone_stages) return;
  const int stage_ranks = p.dp * p.tp;
  const int per_node = std::max(1, p.ranks_per_node);
  for (int s = 0; s < p.pp; ++s) in.stage_node.push_back(s * stage_ranks / per_node);
  in.stage_ranks_per_node = std::min(stage_ranks, per_node);
  in.node_ranks = k.node_ranks;
}

// Each stage's per-op costs for the event simulation of the step.
StepSimulationInput simulation_input(const plan::TrainConfig& c, const plan::RunPlan& plan, const Prediction& p,
                                     const SiteProfile& site, const StagedModel& m, const StepRates& r,
                                     const KernelTiming& k, double element_bytes) {
  StepSimulationInput in;
  in.schedule = plan.schedule;
  in.micro_batches = plan.micro_batches;
  in.interleave = plan.interleave;
  in.overlap = c.strategy.overlap;
  in.p2p_overlap = c.strategy.p2p_overlap;
  const std::vector<StageCost>& stages = m.stages;
  const std::optional<double> page_refault = page_refault_seconds_per_byte(c, site, k);
  const std::optional<TpOverlapWindows> windows =
      c.strategy.tp_overlap ? std::optional(tp_overlap_windows(c, m.description, site, r.flops_per_s)) : std::nullopt;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const StageCost& st = stages[i];
    StageOpCosts op;
    const double gemm = st.gemm_s ? *st.gemm_s : st.executed_flops / r.flops_per_s;
    const double forward_gemm = st.forward_gemm_s ? *st.forward_gemm_s : st.forward_flops / r.flops_per_s;
    const double compute = gemm + st.elementwise_bytes / r.memory_speed;
    op.forward_compute_s = forward_gemm + st.forward_elementwise_bytes / r.memory_speed;
    op.backward_compute_s = compute - op.forward_compute_s;
    if (k.stages) {
      op.forward_compute_s = (*k.stages)[i].forward_s;
      op.backward_compute_s = (*k.stages)[i].backward_s;
    }
    if (k.alone_stages) {
      op.forward_compute_alone_s = (*k.alone_stages)[i].forward_s;
      op.backward_compute_alone_s = (*k.alone_stages)[i].backward_s;
    }
    op.forward_tp_s = static_cast<double>(st.forward_tp_all_reduces) * r.tp_collective_s;
    op.backward_tp_s = static_cast<double>(st.tp_all_reduces - st.forward_tp_all_reduces) * r.tp_collective_s +
                       static_cast<double>(st.recomputed_lone_all_gathers) * r.tp_all_gather_s;
    if (windows) {
      const bool first = st.unit_begin == 0, last = st.unit_end == m.description.units.size();
      const double blocks = static_cast<double>(st.unit_end - st.unit_begin) - (first ? 1 : 0) - (last ? 1 : 0);
      const RecomputedPairs recomputed = c.strategy.recompute != "full" ? RecomputedPairs::none
                                         : c.strategy.recompute_early_stop ? RecomputedPairs::early_stopped
                                                                           : RecomputedPairs::whole;
      const TpSeconds tp =
          overlapped_tp_seconds(*windows, r.tp_collective_s, r.tp_all_gather_s, blocks, first, recomputed);
      op.forward_tp_s = tp.forward;
      op.backward_tp_s = tp.backward;
    }
    if (i + 1 < stages.size()) op.send_forward_s = r.pp.send_seconds(st.boundary_bytes);
    if (i > 0) op.send_backward_s = r.pp.send_seconds(stages[i - 1].boundary_bytes);
    const ExchangeWork work = exchange_work(c, st.parameters, p.dp, plan.micro_batches);
    add_gradient_buckets(op, c, p, st, state_bytes(c, element_bytes).grad, r.dp, work);
    add_exchange_work(op, work, r.dp, r.memory_speed);
    add_parameter_gathers(op, c, p, st, state_bytes(c, element_bytes).param, r.dp);
    add_gradient_page_refaults(op, c, st, page_refault);
    const double owned = st.parameters / (c.strategy.zero >= 1 ? static_cast<double>(p.dp) : 1.0);
    op.optimizer_s = owned * optimizer_bytes_per_parameter(c, element_bytes) / r.memory_speed;
    if (k.stages) {
      const int owners = c.strategy.zero >= 1 ? p.dp : 1;
      const std::optional<double> optimizer =
          timed_optimizer_seconds(c, st.parameters, (*k.stages)[i].parameter_tensors, owners, element_bytes,
                                  *site.kernel_times, k.rank_devices, k.node_ranks);
      if (optimizer) op.optimizer_s = *optimizer;
    }
    in.stages.push_back(std::move(op));
  }
  share_nodes(in, p, k);
  return in;
}

// The simulated step's time and the critical rank's breakdown.
void take_step_time(Prediction& p, const StepSimulation& sim) {
  const StageTimeline& critical = sim.stages[sim.critical_stage];
  p.critical_stage = static_cast<int>(sim.critical_stage);
  p.compute_s = critical.compute_s;
  p.tp_comm_s = critical.tp_s;
  p.p2p_s = critical.p2p_s;
  p.dp_comm_s = critical.dp_exposed_s + critical.gather_s + critical.exchange_s + critical.after_optimizer_s;
  p.optimizer_s = critical.optimizer_s;
  p.bubble_s = critical.bubble_s;
  p.comm_s = p.tp_comm_s + p.p2p_s + p.dp_comm_s;
  p.step_time_s = sim.step_time_s;
}

// Throughput, FLOP rates, MFU and cost from the step time.
void take_rates(Prediction& p, const plan::RunPlan& plan, const StagedModel& m, const SiteProfile& site) {
  const double micro_batches_per_step =
      static_cast<double>(plan.global_batch) / static_cast<double>(plan.micro_batch);
  p.model_flops_per_step = m.description.training_flops() * micro_batches_per_step;
  double executed = 0;
  for (const StageCost& st : m.stages) executed += st.executed_flops * static_cast<double>(p.tp);
  p.executed_flops_per_step = executed * micro_batches_per_step;
  const double device_seconds = p.step_time_s * static_cast<double>(p.devices) * p.devices_per_rank;
  p.tflops_per_device = p.executed_flops_per_step / device_seconds / 1e12;
  p.mfu = p.model_flops_per_step / (device_seconds * p.peak_flops);
  p.hfu = p.executed_flops_per_step / (device_seconds * p.peak_flops);
  p.peak_flops_source = fmt::format("{} ({}: peak_flops.{}, dense)",
                                    site.peak_flops_source.empty() ? "no peak_flops_source given" : site.peak_flops_source,
                                    site.source, p.precision);
  p.samples_per_s = static_cast<double>(plan.global_batch) / p.step_time_s;
  p.tokens_per_s = p.gpt ? p.samples_per_s * static_cast<double>(m.description.seq_len) : 0.0;
  p.cost_per_hour = site.price_per_device_hour.value_or(0.0) * static_cast<double>(p.devices) * p.devices_per_rank;
  p.currency = site.currency;
}

}  // namespace

Refusal refusal_of(plan::Refusal r) {
  switch (r) {
    case plan::Refusal::devices: return Refusal::devices;
    case plan::Refusal::tp_heads: return Refusal::tp_heads;
    case plan::Refusal::pp_layers: return Refusal::pp_layers;
    case plan::Refusal::batch_split: return Refusal::batch_split;
    case plan::Refusal::interleave: return Refusal::interleave;
    case plan::Refusal::sequence_parallel: return Refusal::sequence_parallel;
    case plan::Refusal::none: break;
  }
  return Refusal::none;
}

Prediction predict_step(const plan::TrainConfig& c, const SiteProfile& site, int devices,
                        const RankPlacement* placement) {
  if (c.model.kernels != "native" && site.gemm) {  // the site's GEMMs as the case's kernels run them
    SiteProfile on_kernels = site;
    on_kernels.gemm = site.gemm->for_kernels(c.model.kernels, c.precision.dtype, site.source);
    plan::TrainConfig native = c;
    native.model.kernels = "native";
    Prediction p = predict_step(native, on_kernels, devices, placement);
    p.kernels = c.model.kernels;
    return p;
  }
  SB_USER_CHECK(c.model.kernels == "native",
                "{}: model.kernels {} describes a GPU's kernels; site '{}' has no shape-aware GEMM model ('gemm:') "
                "to run them on", c.source, c.model.kernels, site.name);
  Prediction p = prediction_frame(c, site, devices, placement);
  p.plan = plan::resolve_run_plan(c, p.devices);
  const plan::RunPlan& plan = p.plan;
  if (plan.refusal == plan::Refusal::devices) return plan::refused(p, Refusal::devices, plan.reason);
  if (c.strategy.tp > site.devices_per_node)
    return plan::refused(p, Refusal::tp_beyond_node,
                   fmt::format("tp = {} exceeds the {} devices of one node of site '{}': tensor-parallel collectives "
                               "must stay inside a node", c.strategy.tp, site.devices_per_node, site.name));
  if (!plan.feasible) return plan::refused(p, refusal_of(plan.refusal), plan.reason);
  p.micro_batches = static_cast<int>(plan.micro_batches);
  p.micro_batch = plan.micro_batch;

  const double element_bytes = c.precision.dtype == "fp32" ? 4.0 : 2.0;
  const Recompute recompute = recompute_from_string(c.strategy.recompute);
  StagedModel m = staged_model(c, plan, element_bytes, recompute);
  add_gemm_seconds(m.stages, c, m.description, site, recompute);
  if (auto too_big = predict_memory(p, c, plan, m.stages, site, element_bytes))
    return plan::refused(p, Refusal::memory, std::move(*too_big));

  p.peak_flops = site.peak(c.precision.dtype);
  p.gemm_efficiency = site.efficiency(c.precision.dtype);
  if (site.gemm) {
    // the effective efficiency of the shape-aware model: all GEMM FLOPs over their seconds
    double flops = 0, seconds = 0;
    for (const StageCost& st : m.stages) {
      flops += st.executed_flops;
      seconds += st.gemm_s.value_or(0.0);
    }
    p.gemm_efficiency = seconds > 0 ? flops / (seconds * p.peak_flops) : site.gemm->e_max;
  }
  p.calibrated = site.calibrated();
  const StepRates rates = step_rates(c, p, site, m.description, element_bytes);
  p.tp_algorithm = rates.tp_algorithm;
  p.dp_algorithm = rates.dp.algorithm(parallel::Collective::all_reduce, c.strategy.bucket_mb * 1024.0 * 1024.0);
  p.tp_link = rates.tp.level;
  p.dp_link = rates.dp.level;
  p.pp_link = rates.pp.level;
  const KernelTiming timing = kernel_timing(c, p, site, m);
  p.kernel_timed = timing.stages.has_value();
  take_step_time(p, simulate_step(simulation_input(c, plan, p, site, m, rates, timing, element_bytes)));
  take_rates(p, plan, m, site);
  p.feasible = true;
  return p;
}

}  // namespace sb::costmodel
