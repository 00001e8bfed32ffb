// SPDX-License-Identifier: Apache-2.0
#include "costmodel/gemm_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/check.hpp"

namespace sb::costmodel {

double gemm_quantisation(const GemmModel& g, double batch, double m, double n) {
  SB_CHECK(g.sm_count > 0 && g.tile_m > 0 && g.tile_n > 0 && batch > 0 && m > 0 && n > 0,
           "GEMM quantisation of {}×{}×{} on {} SMs", batch, m, n, g.sm_count);
  const double tm = g.tile_m, tn = g.tile_n;
  const double rows = std::ceil(m / tm), cols = std::ceil(n / tn);
  const double waves = batch * rows * cols / g.sm_count;
  const double padding = m * n / (rows * tm * cols * tn);
  return waves / std::ceil(waves) * padding;
}

double gemm_k_share(const GemmModel& g, double k) {
  SB_CHECK(k > 0 && g.k_overhead >= 0, "GEMM K share of K {} with k_overhead {}", k, g.k_overhead);
  return k / (k + g.k_overhead);
}

double GemmModel::efficiency(const std::string& precision, const std::string& source) const {
  if (precision != "fp8") return e_max;
  SB_USER_CHECK(e_max_fp8.has_value(), "{}: 'gemm.e_max_fp8' is not given: no fp8 GEMM efficiency has been fitted for "
                "this device (predict --fit on a set of fp8 runs writes one)", source);
  return *e_max_fp8;
}

GemmModel GemmModel::for_kernels(const std::string& kernels, const std::string& precision,
                                 const std::string& source) const {
  if (kernels == "native") return *this;
  SB_USER_CHECK(kernels == "sm80", "{}: model.kernels '{}' is not modelled (native or sm80)", source, kernels);
  SB_USER_CHECK(precision != "fp8", "{}: model.kernels sm80 with precision fp8: compute capability 8.0 has no fp8 "
                "tensor cores (use bf16 or fp16, or native kernels)", source);
  SB_USER_CHECK(sm80.has_value(), "{}: 'gemm.e_max_sm80' is not given: no efficiency of kernels of compute capability "
                "8.0's instructions has been fitted for this device (predict --fit on runs with model.kernels sm80 "
                "writes one; on an A100, whose own kernels these are, leave model.kernels native)", source);
  GemmModel g = *this;
  g.e_max = sm80->e_max;
  g.k_overhead = sm80->k_overhead;
  g.e_attention = sm80->e_attention;
  g.e_max_fp8.reset();
  g.sm80.reset();
  return g;
}

GemmModel::KeyConstants GemmModel::constants_of(const std::string& key) const {
  if (key == "e_max_sm80" && sm80) return {sm80->e_max, sm80->k_overhead, sm80->e_attention};
  const std::optional<double> e = key == "e_max" ? std::optional(e_max) : key == "e_max_fp8" ? e_max_fp8 : std::nullopt;
  return {e, k_overhead, e_attention};
}

void GemmModel::set_constants(const std::string& key, double e, double k, std::optional<double> attention) {
  if (key == "e_max_sm80") {
    sm80 = KernelConstants{e, k, attention};
    return;
  }
  efficiency_of(key) = e;
  k_overhead = k;
  e_attention = attention;
}

double gemm_seconds(const GemmModel& g, const GemmShape& s, double peak, double bandwidth, double element_bytes) {
  return gemm_seconds_at(g, g.e_max, s, peak, bandwidth, element_bytes);
}

double gemm_seconds_at(const GemmModel& g, double efficiency, const GemmShape& s, double peak, double bandwidth,
                       double element_bytes) {
  const double compute =
      s.flops() / (peak * efficiency * gemm_k_share(g, s.k) * gemm_quantisation(g, s.batch, s.m, s.n));
  const double bytes = element_bytes * s.batch * (s.m * s.k + s.k * s.n + s.m * s.n);
  return std::max(compute, bytes / bandwidth);
}

FusedAttentionSeconds fused_attention_seconds(const GemmModel& g, double batch_heads, double T, double d, double peak) {
  SB_CHECK(g.sm_count > 0 && g.tile_m > 0 && batch_heads > 0 && T > 0 && d > 0 && peak > 0,
           "fused attention of {} heads × {} tokens × {} on {} SMs", batch_heads, T, d, g.sm_count);
  const double blocks = std::ceil(T / g.tile_m);
  const double computed = (blocks + 1.0) / (2.0 * blocks);  // the causal kernel's share of the T×T scores
  const double keys = T * computed;  // the keys a query block's loop visits, on average
  const double waves = batch_heads * blocks / g.sm_count;
  const double efficiency = g.e_attention.value_or(g.e_max) * keys / (keys + g.k_overhead) * waves / std::ceil(waves);
  const double forward = 4.0 * batch_heads * T * T * d * computed / (peak * efficiency);
  return {forward, 2.5 * forward};
}

std::vector<GemmShape> gemm_backward(const GemmShape& s) {
  return {{s.batch, s.m, s.k, s.n}, {s.batch, s.k, s.n, s.m}};
}

namespace {
double heads_per_rank(const gpt::GptConfig& config, std::int64_t B, std::int64_t tp) {
  return static_cast<double>(B) * static_cast<double>(config.heads) / static_cast<double>(tp);
}
double head_dimension(const gpt::GptConfig& config) { return static_cast<double>(config.channels / config.heads); }
}  // namespace

std::vector<GemmShape> gpt_attention_core_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T,
                                                std::int64_t tp) {
  const double heads = heads_per_rank(config, B, tp), t = static_cast<double>(T), d = head_dimension(config);
  return {{heads, t, t, d}, {heads, t, d, t}};  // Q·Kᵀ, P·V
}

FusedAttentionSeconds gpt_fused_attention_seconds(const GemmModel& g, const gpt::GptConfig& config, std::int64_t B,
                                                  std::int64_t T, std::int64_t tp, double peak) {
  return fused_attention_seconds(g, heads_per_rank(config, B, tp), static_cast<double>(T), head_dimension(config),
                                 peak);
}

std::vector<GemmShape> gpt_block_linear_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T,
                                              std::int64_t tp) {
  // QKV (GPT-2's K = C: 3C), the output projection, the MLP's inputs (gate and up, or up) and its down
  const double rows = static_cast<double>(B * T), C = static_cast<double>(config.channels);
  const double t = static_cast<double>(tp);
  const double K = static_cast<double>(gpt::gpt_kv_heads(config) * (config.channels / config.heads));
  const double F = static_cast<double>(gpt::gpt_mlp_width(config));
  const double in_matrices = static_cast<double>(gpt::gpt_mlp_matrices(config) - 1);
  return {{1, rows, (C + 2 * K) / t, C}, {1, rows, C, C / t}, {1, rows, in_matrices * F / t, C}, {1, rows, C, F / t}};
}

std::vector<GemmShape> gpt_block_gemms(const gpt::GptConfig& config, std::int64_t B, std::int64_t T, std::int64_t tp) {
  std::vector<GemmShape> gemms = gpt_block_linear_gemms(config, B, T, tp);
  for (const GemmShape& s : gpt_attention_core_gemms(config, B, T, tp)) gemms.push_back(s);
  return gemms;
}

GemmShape gpt_head_gemm(const gpt::GptConfig& config, std::int64_t B, std::int64_t T, std::int64_t tp) {
  return {1, static_cast<double>(B * T), static_cast<double>(config.vocab) / static_cast<double>(tp),
          static_cast<double>(config.channels)};
}

}  // namespace sb::costmodel
