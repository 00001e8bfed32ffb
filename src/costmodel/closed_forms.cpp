// SPDX-License-Identifier: Apache-2.0
// The closed forms of closed_forms.hpp. Collective factors come from parallel/bandwidth.hpp,
// the one definition the communicators' records and `calibrate` also use.
#include "costmodel/closed_forms.hpp"

#include "core/check.hpp"
#include "parallel/bandwidth.hpp"

namespace sb::costmodel {

double megatron_training_flops(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * l));
}

double megatron_training_flops_full_recompute(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * h * l));
}

double training_flops_per_token(double N, double l, double s, double h) {
  return 6.0 * N + 12.0 * l * s * h;
}

BlockActivationTerms block_activation_terms(double kv_fraction, double mlp_kept, bool dropout) {
  SB_CHECK(kv_fraction > 0 && kv_fraction <= 1 && mlp_kept > 0, "activation terms of kv/heads {} and MLP {}",
           kv_fraction, mlp_kept);
  const double masks = dropout ? 2.0 : 0.0;
  return {.replicated = 4.0 + 2.0 + 2.0 + masks,
          .tensor_parallel = 2.0 + 4.0 * kv_fraction + 2.0 + mlp_kept,
          .scores = dropout ? 5.0 : 2.0};
}

double activation_bytes_per_layer(double s, double b, double h, double a, double t,
                                  bool sequence_parallel, Recompute recompute, bool flash_attention,
                                  const BlockActivationTerms& terms) {
  SB_CHECK(s > 0 && b > 0 && h > 0 && a > 0 && t >= 1, "activation memory of s {} b {} h {} a {} t {}",
           s, b, h, a, t);
  const double sbh = s * b * h;
  const double kept = terms.replicated + terms.tensor_parallel;  // GPT-3: 34
  switch (recompute) {
    case Recompute::full:
      return sequence_parallel ? 2.0 * sbh / t : 2.0 * sbh;
    case Recompute::selective:
      return sequence_parallel ? kept * sbh / t : sbh * (terms.replicated + terms.tensor_parallel / t);
    case Recompute::none:
      break;
  }
  const double attention = flash_attention ? 0.0 : terms.scores * a * s / h;  // the T² tensors
  return sequence_parallel ? sbh / t * (kept + attention)
                           : sbh * (terms.replicated + terms.tensor_parallel / t + attention / t);
}

ModelStateBytes zero_model_state_bytes(double psi, int nd, int stage, double param_bytes,
                                       double grad_bytes, double optimizer_bytes) {
  SB_CHECK(nd >= 1 && stage >= 0 && stage <= 3, "ZeRO stage {} over {} ranks", stage, nd);
  const double shard = 1.0 / static_cast<double>(nd);
  ModelStateBytes m;
  m.params = param_bytes * psi * (stage >= 3 ? shard : 1.0);
  m.grads = grad_bytes * psi * (stage >= 2 ? shard : 1.0);
  m.optimizer = optimizer_bytes * psi * (stage >= 1 ? shard : 1.0);
  return m;
}

double pipeline_bubble_fraction(int p, int m, int v) {
  SB_CHECK(p >= 1 && m >= 1 && v >= 1, "pipeline bubble of p {} m {} v {}", p, m, v);
  const double idle = static_cast<double>(p - 1) / static_cast<double>(v);
  return idle / (static_cast<double>(m) + idle);
}

namespace {
double ring_seconds(parallel::Collective collective, double steps_per_rank, double bytes, int n,
                    LinkCost link) {
  SB_CHECK(n >= 1 && bytes >= 0, "collective of {} bytes over {} ranks", bytes, n);
  if (n == 1) return 0.0;
  SB_CHECK(link.bandwidth > 0, "a link of bandwidth {} bytes/s", link.bandwidth);
  const double reduced = collective == parallel::Collective::all_gather ? 0.0 : static_cast<double>(n - 1) / n;
  return parallel::bus_bandwidth_factor(collective, n) * bytes / link.bandwidth + reduced * bytes * link.reduction +
         steps_per_rank * static_cast<double>(n - 1) * link.latency;
}
}  // namespace

double ring_all_reduce_seconds(double bytes, int n, LinkCost link) {
  return ring_seconds(parallel::Collective::all_reduce, 2.0, bytes, n, link);
}

double ring_reduce_scatter_seconds(double bytes, int n, LinkCost link) {
  return ring_seconds(parallel::Collective::reduce_scatter, 1.0, bytes, n, link);
}

double ring_all_gather_seconds(double bytes, int n, LinkCost link) {
  return ring_seconds(parallel::Collective::all_gather, 1.0, bytes, n, link);
}

double p2p_seconds(double bytes, LinkCost link) {
  SB_CHECK(link.bandwidth > 0 && bytes >= 0, "a message of {} bytes over a link of {} bytes/s", bytes,
           link.bandwidth);
  return link.latency + bytes / link.bandwidth;
}

}  // namespace sb::costmodel
