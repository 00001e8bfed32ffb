// SPDX-License-Identifier: Apache-2.0
// The shape-aware GEMM time of a GPU site (`gemm:` of a site profile): a GEMM of M×N outputs
// over K runs as output tiles of tile_m × tile_n spread over the device's SMs in waves, each
// tile at e_max of the dense peak once its K loop runs; filling the tile's pipeline and writing
// its outputs cost as much as k_overhead more steps of that loop; the last wave's idle SMs and
// the padding of partial tiles are lost, and no GEMM runs faster than its operands and result
// move through HBM:
//   t(M, N, K) = max( 2·M·N·K / (peak · e_max · K/(K + k_overhead) · q(M, N)),  e·(M·K + K·N + M·N) / bandwidth )
//   q(M, N) = [tiles / SMs] / ceil(tiles / SMs) · M·N / (ceil(M/tm)·tm · ceil(N/tn)·tn),
//   tiles = ceil(M/tm) · ceil(N/tn) (times the batch of a batched GEMM).
// So a GEMM over a short K (a narrow model's layers, unfused attention's K = head dimension)
// runs below one over a long K, as cuBLAS's do. The fused attention kernel is timed as one
// (fused_attention_seconds, below).
// Also the GPT's GEMMs per block, head and tp rank as such shapes. Leaves out where the times go
// (step_prediction) and the fit of the constants (validation_set).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/gpt/gpt_config.hpp"

namespace sb::costmodel {

struct GemmModel {
  int sm_count = 0;               // streaming multiprocessors (datasheet)
  int tile_m = 128, tile_n = 128;  // output tile of the large GEMMs' kernels
  double e_max = 1.0;             // a full wave of full tiles over a long K reaches e_max × the dense peak (fitted)
  double k_overhead = 0;          // a tile's pipeline fill and epilogue, in steps of K (fitted; 0: none)
  // the same for fp8 GEMMs against the fp8 dense peak (fitted on fp8 runs); none: fp8 not modelled
  std::optional<double> e_max_fp8;
  // the fused (flash) attention kernel's computed FLOPs reach e_attention × the 16-bit dense peak
  // in a full wave (fitted on runs over several sequence lengths); none: as the GEMMs, e_max
  std::optional<double> e_attention;
  // Kernels of compute capability 8.0's instructions (Ampere's mma.sync; no wgmma, no TMA) on a
  // later GPU, a case's model.kernels sm80: their own e_max (gemm.e_max_sm80, fitted on runs of
  // such software), e_attention (e_attention_sm80) and k_overhead (k_overhead_sm80; both default
  // to the native ones); none: not modelled.
  struct KernelConstants {
    double e_max = 1.0, k_overhead = 0;
    std::optional<double> e_attention;
  };
  std::optional<KernelConstants> sm80;
  // This model as kernels of `kernels` run it ("native": itself; "sm80": its sm80 constants in
  // place of e_max, k_overhead and e_attention, fp8 left out); UserError naming `source` when
  // the profile has no such constants.
  GemmModel for_kernels(const std::string& kernels, const std::string& precision, const std::string& source) const;
  // The profile key of the efficiency a GEMM in `precision` with `kernels` runs at: "e_max_fp8"
  // for fp8, "e_max_sm80" for sm80 kernels, else "e_max".
  static const char* key_for(const std::string& precision, const std::string& kernels = "native") {
    return precision == "fp8" ? "e_max_fp8" : kernels == "sm80" ? "e_max_sm80" : "e_max";
  }
  // The suffix of the profile keys a key's fit writes: "_sm80" for e_max_sm80, else none.
  static std::string key_suffix(const std::string& key) { return key == "e_max_sm80" ? "_sm80" : ""; }
  // That efficiency; UserError naming `source` when fp8 is asked of a model without e_max_fp8.
  double efficiency(const std::string& precision, const std::string& source) const;
  // The value under a profile key (e_max, e_max_fp8) for a fit or a replay to set; an absent
  // e_max_fp8 is created first (at 1.0).
  double& efficiency_of(const std::string& key) {
    return key == "e_max_fp8" ? e_max_fp8.emplace(e_max_fp8.value_or(1.0)) : e_max;
  }
  // The constants under a profile key (e_max, e_max_fp8, e_max_sm80): the efficiency it names
  // (none where the profile has none), and the k_overhead and e_attention that go with it (the
  // sm80 set's for e_max_sm80 where the profile has one, else the native ones).
  struct KeyConstants {
    std::optional<double> e;
    double k_overhead = 0;
    std::optional<double> e_attention;
  };
  KeyConstants constants_of(const std::string& key) const;
  // A fit's or a replay's constants under `key`, the inverse of constants_of.
  void set_constants(const std::string& key, double e, double k, std::optional<double> attention);
};

struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * batch * m * n * k; }
};

// K/(K + k_overhead) above: the share of a tile's time its K loop runs, in (0, 1].
double gemm_k_share(const GemmModel& g, double k);
// q(M, N) above: the wave quantisation times the tile padding, in (0, 1].
double gemm_quantisation(const GemmModel& g, double batch, double m, double n);
// t(M, N, K) above; peak in FLOP/s, bandwidth in bytes/s, element_bytes of the operands.
double gemm_seconds(const GemmModel& g, const GemmShape& s, double peak, double bandwidth, double element_bytes);
// The same at `efficiency` in place of e_max (an fp8 GEMM at e_max_fp8 of the fp8 peak).
double gemm_seconds_at(const GemmModel& g, double efficiency, const GemmShape& s, double peak, double bandwidth,
                       double element_bytes);
// The two GEMMs of a GEMM's backward: the input's gradient (M×K over N) and the weight's (K×N over M).
std::vector<GemmShape> gemm_backward(const GemmShape& s);

// The fused causal attention kernel (FlashAttention's) of `batch_heads` heads of T queries and T
// keys of head dimension d, on a 16-bit peak: each head's queries go in blocks of tile_m, one
// thread block each, over the SMs in waves; a block's loop visits only the key blocks on and
// below the diagonal, so the kernel computes the share c = (n + 1)/(2n) of the full T×T scores
// (n = ⌈T/tile_m⌉), and like a GEMM tile over K it pays k_overhead more steps of its loop over
// the keys (loading the queries, writing the output):
//   forward  = 4·batch_heads·T²·d · c / (peak · e_attention · K/(K + k_overhead) · q),
//   K = c·T, q = waves / ⌈waves⌉ (waves = batch_heads·n / SMs), e_attention defaulting to e_max;
//   backward = 2.5 × forward (the scores recomputed, then dV, dP, dQ and dK: five products to two).
struct FusedAttentionSeconds {
  double forward = 0, backward = 0;
};
FusedAttentionSeconds fused_attention_seconds(const GemmModel& g, double batch_heads, double T, double d, double peak);

// The first kGptBlockLinearGemms of gpt_block_gemms are the block's linear layers (QKV, the
// attention's projection, the MLP's two), the rest its attention core.
inline constexpr std::size_t kGptBlockLinearGemms = 4;
// One GPT block's forward GEMMs on one of tp ranks (Megatron-LM's column/row split) for B
// sequences of T tokens; their FLOPs times tp are gpt_block_forward_flops. The attention core
// (scores, probabilities·V) as the unfused attention runs it: cuBLAS batched GEMMs over all T×T.
std::vector<GemmShape> gpt_block_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T, std::int64_t tp);
// Its first kGptBlockLinearGemms: the block's linear layers alone.
std::vector<GemmShape> gpt_block_linear_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T,
                                              std::int64_t tp);
// The attention core's two batched GEMMs of gpt_block_gemms (what selective recomputation reruns).
std::vector<GemmShape> gpt_attention_core_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T,
                                                std::int64_t tp);
// The fused attention kernel of gpt_attention_core_gemms's heads (fused_attention_seconds).
FusedAttentionSeconds gpt_fused_attention_seconds(const GemmModel& g, const gpt::GptConfig& config, std::int64_t B,
                                                  std::int64_t T, std::int64_t tp, double peak);
// The head's logits GEMM on one tp rank (vocabulary-parallel).
GemmShape gpt_head_gemm(const gpt::GptConfig& config, std::int64_t B, std::int64_t T, std::int64_t tp);

}  // namespace sb::costmodel
