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
};

// The tp collectives' exposed seconds of one micro-batch on a stage.
struct TpSeconds {
  double forward = 0, backward = 0;
};

// `blocks` blocks, each pair taking `pair_s` alone; `embedding`: the stage holds the embedding
// (its output's all-reduce); `full_recompute`: the backward reruns each block's forward pairs.
TpSeconds overlapped_tp_seconds(const TpOverlapWindows& windows, double pair_s, double blocks, bool embedding,
                                bool full_recompute);

}  // namespace sb::costmodel
