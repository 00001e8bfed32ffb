// SPDX-License-Identifier: Apache-2.0
// Which part of the GPT one rank holds: a contiguous range of blocks (a pipeline stage), with or
// without the embedding and the head, and its Megatron tensor-parallel shard (heads, MLP
// columns and vocabulary split over the tp group). Shapes of the local parameter tensors and
// the map from a local element to its index in the unsplit tensor (so a shard initialises and
// compares as the slice of the one-rank model). Leaves out communication: the tp collectives
// enter as std::function hooks, and the pipeline schedule belongs to its engine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "core/memory.hpp"
#include "core/recompute.hpp"
#include "core/tensor.hpp"
#include "models/gpt/gpt_config.hpp"

namespace sb::gpt {

// The tensor-parallel group seen by a model: rank, size and collectives (MPI-free). With size
// > 1 the two all-reduces are required; sequence parallelism also needs the last two.
struct TensorParallelGroup {
  int rank = 0, size = 1;
  std::function<void(std::span<float>)> all_reduce_sum;  // in place over the tp group
  std::function<void(std::span<float>)> all_reduce_max;
  // send (size · n) summed over the group, this rank's n of it (block rank) into recv (n)
  std::function<void(std::span<const float> send, std::span<float> recv)> reduce_scatter_sum;
  // every rank's send (n bytes) into recv (size · n), in rank order
  std::function<void(std::span<const std::byte> send, std::span<std::byte> recv)> all_gather;
};

// Which part of the GPT this rank holds.
struct GptPartition {
  std::int64_t layer_begin = 0, layer_end = -1;  // blocks [begin, end); -1 = config.layers
  bool embedding = true;  // first stage: token+position embedding lookup from tokens
  bool head = true;       // last stage: final LayerNorm, tied output head, loss
  TensorParallelGroup tp;
  std::int64_t activation_slots = 1;  // micro-batches whose activations are alive at once
  // What each slot keeps for the backward (gpt.hpp's ActivationTensorsT): selective drops the
  // attention probabilities, full all of a block but its output; the dropped tensors of one block
  // live in one scratch shared by the slots and are recomputed there in the backward.
  Recompute recompute = Recompute::none;
  // Megatron-LM's sequence parallelism (Korthikanti et al. 2022), with tp > 1: the LayerNorm and
  // residual regions hold 1/t of the (B·T) token rows, rank r rows [r·BT/t, (r+1)·BT/t); an
  // all-gather before each column-parallel linear and a reduce-scatter after each row-parallel
  // one replace the all-reduces.
  bool sequence_parallel = false;
  // How the model's own gradient buffer is charged: resident_pages under ZeRO-2, whose
  // reduction gives each range's pages back once it is reduced (core/memory.hpp).
  Residency gradient_residency = Residency::allocated;
  // How the model's own parameter buffer is charged: resident_pages under ZeRO-3, where it is
  // empty but while initialising and while a checkpoint gathers every parameter into it (the
  // units are read from the gathers' own buffers: gpt.hpp's set_unit_parameter_gather), charged
  // to comm; the rank's shard of the parameters is held elsewhere, by the sharding.
  Residency parameter_residency = Residency::allocated;
  // How the fp32 master weights' buffer is charged (16-bit storage only): resident_pages under
  // ZeRO-1, 2 and 3 with mixed precision, where the data-parallel sharding holds this rank's
  // shard of the master weights and the whole buffer is held only while initialising and while a
  // checkpoint gathers every master weight into it.
  Residency master_residency = Residency::allocated;
};

// A partition resolved against a config: every local size, checked (UserError on a tp size
// that does not divide the heads, a vocabulary smaller than tp, an empty or out-of-range
// layer range).
struct GptShard {
  std::int64_t layer_begin = 0;  // first global block held
  std::int64_t L = 0;            // blocks held
  std::int64_t C = 0, NH = 0, V = 0, maxT = 0;  // unsplit sizes
  int tp_rank = 0, tp_size = 1;
  std::int64_t C_tp = 0;         // C/t: attention channels of this rank (NH/t heads)
  std::int64_t NH_tp = 0;        // NH/t
  std::int64_t F_tp = 0;         // 4C/t: MLP hidden columns of this rank
  std::int64_t vocab_begin = 0;  // wte rows [vocab_begin, vocab_begin + V_tp) = r·V/t ..
  std::int64_t V_tp = 0;
  bool embedding = true, head = true;
  std::int64_t activation_slots = 1;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;  // only with tp_size > 1
  // Token rows of the residual stream, LayerNorms and block outputs this rank holds of BT.
  std::int64_t residual_rows(std::int64_t BT) const { return sequence_parallel ? BT / tp_size : BT; }
  bool whole() const {  // the unsplit model: the one-rank layout and kernels
    return tp_size == 1 && embedding && head;
  }
};
GptShard resolve_gpt_partition(const GptConfig& config, const GptPartition& partition);
// The same sizes without asking whether this rank can train it (spec-only sizes, no tp hooks):
// for the cost model, which lays out ranks it never runs.
GptShard gpt_shard_shape(const GptConfig& config, const GptPartition& partition);

inline constexpr int kGptTensorCount = 16;

// How tensor k (llm.c order: wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb
// fcprojw fcprojb lnfw lnfb) is cut over the tp group.
enum class TensorSplit {
  replicated,  // every tp rank holds an identical copy (LayerNorms, wpe, lnf, row-parallel
               // biases: tp rank 0 adds those before the all-reduce, so they count once)
  vocab_rows,  // wte: rows [vocab_begin, vocab_begin + V_tp)
  qkv_rows,    // qkvw, qkvb: the q, k and v rows of this rank's heads, [q_r | k_r | v_r]
  rows,        // fcw, fcb (column-parallel): output rows r·4C/t ..
  columns,     // attprojw, fcprojw (row-parallel): input columns r·C/t .. (r·4C/t ..)
};
TensorSplit gpt_tensor_split(int k);

// Local shape of tensor k on this shard; numel 0 when the shard does not hold it (wpe off
// the first stage, lnf off the last, wte on a middle stage).
std::array<Shape, kGptTensorCount> gpt_shard_shapes(const GptConfig& config, const GptShard& shard);
std::int64_t gpt_shard_parameter_count(const GptConfig& config, const GptShard& shard);

// Index in the unsplit tensor k (its gpt_parameter_specs shape) of element i of this shard's
// tensor k. Identity for the whole model.
std::int64_t gpt_unsplit_index(const GptShard& shard, int k, std::int64_t i);

}  // namespace sb::gpt
