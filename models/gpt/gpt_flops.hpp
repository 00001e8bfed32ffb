// SPDX-License-Identifier: Apache-2.0
// FLOPs of one GPT training step, the single definition shared by the trainer's MFU and the
// cost model. Leaves out recomputation (activation checkpointing adds one more forward).
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"
#include "models/gpt/gpt_config.hpp"

namespace sb::gpt {

// Forward FLOPs of B sequences of T tokens, counting a multiply-add as 2 FLOPs and only
// the matrix products (Narayanan et al. 2021, "Efficient Large-Scale Language Model
// Training on GPU Clusters Using Megatron-LM", appendix):
//   per block  24·B·T·C²   QKV (6), attention projection (2), MLP (16) GEMMs
//            +  4·B·T²·C   scores Q·Kᵀ and probabilities·V, the causal mask not discounted
//   head        2·B·T·C·V  logits against the tied token embedding (llama: its own head)
// In general a block's GEMMs are 2·B·T·(2C² + 2CK + mCF), K the key/value width, F the MLP's and
// m its matrices: GPT-2's K = C, F = 4C, m = 2 give the 24·B·T·C² above; Llama's gated MLP has
// m = 3, Nemotron-4's plain one m = 2.
// Element-wise work (LayerNorm, GELU, softmax, residuals, the optimizer) is left out: it
// is bandwidth-bound and under 1% of the total at these shapes.
// The attention core 4·B·T²·C (scores and probabilities·V) is also what selective
// recomputation (Korthikanti et al. 2022) runs a second time in the backward.
// Each term is the kernels' own count of the calls a block makes (kernels.hpp's work estimates).
inline double gpt_block_attention_core_forward_flops(const GptConfig& config, std::int64_t B,
                                                     std::int64_t T) {
  return kernels::attention_forward_work(B, T, config.channels, config.heads, 4).flops;
}
inline double gpt_block_forward_flops(const GptConfig& config, std::int64_t B, std::int64_t T) {
  // Q and output projections C -> C, K and V C -> kv_heads·d each (GPT-2: QKV C -> 3C), the MLP's
  // inputs C -> (m − 1)·F (gate and up, or up; GPT-2's fc) and its down F -> C, with the attention
  // core as above (its query heads span C whatever the key/value heads)
  const std::int64_t BT = B * T, C = config.channels;
  const std::int64_t K = gpt_kv_heads(config) * (C / config.heads), F = gpt_mlp_width(config);
  return kernels::matmul_forward_work(BT, C, C + 2 * K, 4).flops +  // q, k, v
         gpt_block_attention_core_forward_flops(config, B, T) +
         kernels::matmul_forward_work(BT, C, C, 4).flops +          // output projection
         kernels::matmul_forward_work(BT, C, (gpt_mlp_matrices(config) - 1) * F, 4).flops +  // gate and up
         kernels::matmul_forward_work(BT, F, C, 4).flops;           // down
}
inline double gpt_head_forward_flops(const GptConfig& config, std::int64_t B, std::int64_t T) {
  return kernels::matmul_forward_work(B * T, config.channels, config.vocab, 4).flops;
}
inline double gpt_forward_flops(const GptConfig& config, std::int64_t B, std::int64_t T) {
  return static_cast<double>(config.layers) * gpt_block_forward_flops(config, B, T) +
         gpt_head_forward_flops(config, B, T);
}

// Forward + backward = 3 × forward (the backward computes two GEMMs per forward GEMM:
// gradients of the input and of the weight), which for GPT-2 blocks equals Megatron-LM's
//   72·B·T·L·C²·(1 + T/(6C) + V/(12·L·C)).
inline double gpt_training_flops(const GptConfig& config, std::int64_t B, std::int64_t T) {
  return 3.0 * gpt_forward_flops(config, B, T);
}

}  // namespace sb::gpt
