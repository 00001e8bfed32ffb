// SPDX-License-Identifier: Apache-2.0
// The cost model's closed forms from the literature, each a pure function with its source:
// training FLOPs, activation memory, ZeRO model-state memory, the pipeline bubble and the time
// of a collective on one link level. Leaves out which of them a configuration calls (predict).
#pragma once

#include <string_view>

#include "core/recompute.hpp"

namespace sb::costmodel {

using sb::Recompute;
using sb::recompute_from_string;

// ---- FLOPs (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", §5.1 and appendix) -------------------------------------------
// One iteration of B sequences of s tokens, l layers, hidden h, vocabulary V, without
// recomputation (eq. 2): 72·B·s·l·h²·(1 + s/(6h) + V/(12·h·l)).
double megatron_training_flops(double B, double s, double l, double h, double V);
// With full recomputation, which runs every block's forward twice (eq. 3):
// 96·B·s·l·h²·(1 + s/(6h) + V/(16·h·l)).
double megatron_training_flops_full_recompute(double B, double s, double l, double h, double V);
// Per token: 6N + 12·l·s·h, N the parameters that enter a GEMM (12·l·h² + V·h for the GPT;
// 6N is Kaplan et al. 2020's rule, 12·l·s·h the attention scores and their product with V,
// forward 4·s·h per layer and token, backward twice that). Times B·s it is eq. 2 exactly.
double training_flops_per_token(double N, double l, double s, double h);

// ---- activation memory (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", §4 and Table 2) -----------------------------------------------------------
// Bytes one transformer layer keeps for its backward: sequence s, micro-batch b, hidden h,
// heads a, tensor parallelism t, 16-bit activations and 1-byte dropout masks:
//   no recomputation   sbh·(10 + 24/t + 5as/(ht))     sequence parallel: sbh/t·(34 + 5as/h)
//   selective          sbh·(10 + 24/t)                sequence parallel: 34·sbh/t
//   full               2·sbh (the layer's input)      sequence parallel: 2·sbh/t
// With t = 1 the first line is sbh·(34 + 5as/h). flash_attention: the fused attention kernel
// (FlashAttention, Dao et al. 2022) keeps none of the 5·a·s²·b bytes of attention scores,
// softmax output, dropout mask and output (it recomputes them from Q, K, V in its backward), so
// no recomputation keeps what selective keeps: sbh·(10 + 24/t), sequence parallel 34·sbh/t.
//
// The same count by where each kept tensor sits (§4.1), per s·b·h bytes, so that a block other
// than GPT-3's is counted tensor by tensor rather than as GPT-3's:
//   replicated       outside the tensor-parallel region (sharded over t by sequence parallelism
//                    only): the two norms' inputs 4, the attention's and the MLP's inputs 2 + 2,
//                    and with dropout its two 1-byte masks 2. GPT-3: 10.
//   tensor_parallel  sharded over t: Q 2, K and V 4·kv/a (grouped-query attention's kv heads of
//                    a), the output projection's input 2, and the MLP's kept tensors. GPT-3:
//                    2 + 4 + 2 + 16 = 24 (GELU's input and output, 2·4h wide each).
//   scores           per a·s/h, unfused attention only: the softmax's output 2 and, with dropout,
//                    its mask 1 and the masked output 2. GPT-3: 5.
// The default terms are GPT-3's: the formulas above.
struct BlockActivationTerms {
  double replicated = 10.0;
  double tensor_parallel = 24.0;
  double scores = 5.0;
  bool operator==(const BlockActivationTerms&) const = default;
};
// A block's terms: kv_fraction its key/value heads over its heads, mlp_kept the bytes its MLP
// keeps per s·b·h, dropout whether it has dropout (masks kept).
BlockActivationTerms block_activation_terms(double kv_fraction, double mlp_kept, bool dropout);
double activation_bytes_per_layer(double s, double b, double h, double a, double t,
                                  bool sequence_parallel, Recompute recompute, bool flash_attention = false,
                                  const BlockActivationTerms& terms = {});

// ---- ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models", §5 and Figure 1) -------------------------------------------------------------
// Model states of Ψ parameters over Nd data-parallel ranks with mixed-precision Adam: 2Ψ
// fp16 parameters, 2Ψ fp16 gradients, KΨ optimizer states (K = 12: fp32 master, momentum,
// variance). Stage 1 shards the optimizer states, 2 also the gradients, 3 also the parameters:
//   stage 0  (2 + 2 + K)Ψ      stage 2  2Ψ + (2 + K)Ψ/Nd
//   stage 1  4Ψ + KΨ/Nd        stage 3  (2 + 2 + K)Ψ/Nd
// The byte counts per parameter are arguments so fp32 training (4, 4, 8) uses the same form.
struct ModelStateBytes {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};
ModelStateBytes zero_model_state_bytes(double psi, int nd, int stage, double param_bytes = 2,
                                       double grad_bytes = 2, double optimizer_bytes = 12);

// ---- pipeline (Huang et al. 2019 GPipe; Narayanan et al. 2021 §2.2) -----------------------------
// The idle fraction of a pipeline step with p stages, m micro-batches and v virtual stages per
// device (the interleaved schedule): ((p−1)/v) / (m + (p−1)/v); v = 1 gives (p−1)/(m+p−1).
double pipeline_bubble_fraction(int p, int m, int v = 1);

// ---- communication on one link level (Patarasuk & Yuan 2009, Thakur et al. 2005) -----------------
// bandwidth in bytes/s per device and direction, latency α in seconds per message step.
struct LinkCost {
  double bandwidth = 0;
  double latency = 0;
  double reduction = 0;  // γ: seconds per byte a rank reduces (calibrated sites; 0: moves only)
};
// Ring all-reduce of S bytes over n ranks: 2(n−1)/n · S/B + (n−1)/n · S·γ + 2(n−1)·α (0 for n = 1).
double ring_all_reduce_seconds(double bytes, int n, LinkCost link);
// Ring reduce-scatter or all-gather, S the full buffer: (n−1)/n · S/B + (n−1)·α, the
// reduce-scatter + (n−1)/n · S·γ.
double ring_reduce_scatter_seconds(double bytes, int n, LinkCost link);
double ring_all_gather_seconds(double bytes, int n, LinkCost link);
// Point-to-point message: α + S/B.
double p2p_seconds(double bytes, LinkCost link);

}  // namespace sb::costmodel
