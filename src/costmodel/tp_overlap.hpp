// SPDX-License-Identifier: Apache-2.0
// strategy.tp_overlap: a GPT block's two sequence-parallel pairs (the all-gather before and the
// reduce-scatter after the attention's linear layers, and the same around the MLP's) run under
// those layers' GEMMs, chunk by chunk, as Transformer Engine's userbuffers run them (NeMo's
// ub_tp_comm_overlap); what shows is the part of a pair its GEMMs do not cover. The embedding's
// all-reduce has no GEMM to hide under. Leaves out the GEMM times themselves (gemm_model) and
// the pair's time (nccl_collectives).
#pragma once

namespace sb::costmodel {

// One block's linear-layer GEMM seconds per micro-batch a pair runs under: the attention's
// (QKV and projection) and the MLP's (its two), forward and backward (input and weight gradients).
struct TpOverlapWindows {
  double attention_forward = 0, mlp_forward = 0, attention_backward = 0, mlp_backward = 0;
  double mlp_input_forward = 0;  // the MLP's input GEMM alone (gate and up, or up), forward
};

// What the backward reruns of each block's forward pairs: nothing, the whole forward's two, or
// an early-stopped forward's (strategy.recompute_early_stop): the attention's pair and the MLP's
// all-gather alone, under the MLP's input GEMM (the down projection and its reduce-scatter not
// rerun).
enum class RecomputedPairs { none, whole, early_stopped };

// The tp collectives' exposed seconds of one micro-batch on a stage.
struct TpSeconds {
  double forward = 0, backward = 0;
};

// `blocks` blocks, each pair taking `pair_s` alone and its all-gather `all_gather_s`; `embedding`:
// the stage holds the embedding (its output's all-reduce); `recomputed`: what the backward reruns.
TpSeconds overlapped_tp_seconds(const TpOverlapWindows& windows, double pair_s, double all_gather_s, double blocks,
                                bool embedding, RecomputedPairs recomputed);

}  // namespace sb::costmodel
