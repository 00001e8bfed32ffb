// SPDX-License-Identifier: Apache-2.0
// Vocabulary-parallel embedding and cross-entropy on one rank's shard, Kokkos over rows (see
// kernels.hpp). Leaves out the all-reduces between the calls, which are the caller's.
#include <cmath>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {
constexpr i64 kEmbeddingColumnBlock = 16;  // dwte columns per backward task, one cache line
}  // namespace

SB_DECLARE_EMBEDDING_SHARD_FORWARD(float, float) {
  parallel_for_each("sb::embedding_shard_forward", B * T_, [=](i64 bt) {
    const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
    const bool mine = row >= 0 && row < V;
    float* out_row = out + bt * C;
    const float* wpe_row = wpe ? wpe + (bt % T_) * C : nullptr;
    for (i64 c = 0; c < C; ++c) {
      float value = mine ? wte[row * C + c] : 0.0f;
      if (wpe_row) value += wpe_row[c];
      out_row[c] = value;
    }
  });
}

// As embedding_backward: tasks own rows of dwpe and column blocks of dwte, tokens in order.
SB_DECLARE_EMBEDDING_SHARD_BACKWARD(float, float) {
  if (dwpe) {
    parallel_for_each("sb::embedding_shard_backward::dwpe", T_, [=](i64 t) {
      float* dwpe_row = dwpe + t * C;
      for (i64 b = 0; b < B; ++b) {
        const float* dout_row = dout + (b * T_ + t) * C;
        for (i64 c = 0; c < C; ++c) dwpe_row[c] += dout_row[c];
      }
    });
  }
  const i64 blocks = (C + kEmbeddingColumnBlock - 1) / kEmbeddingColumnBlock;
  parallel_for_each("sb::embedding_shard_backward::dwte", blocks, [=](i64 block) {
    const i64 c0 = block * kEmbeddingColumnBlock;
    const i64 width = std::min(kEmbeddingColumnBlock, C - c0);
    for (i64 bt = 0; bt < B * T_; ++bt) {
      const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
      if (row < 0 || row >= V) continue;
      float* dwte_row = dwte + row * C + c0;
      const float* dout_row = dout + bt * C + c0;
      for (i64 j = 0; j < width; ++j) dwte_row[j] += dout_row[j];
    }
  });
}

SB_DECLARE_CROSSENTROPY_SHARD_MAX(float, float) {
  parallel_for_each("sb::crossentropy_shard_max", BT, [=](i64 r) {
    const float* x = logits + r * V;
    float m = -INFINITY;
    for (i64 i = 0; i < V; ++i) m = m > x[i] ? m : x[i];
    row_max[r] = m;
  });
}

SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS(float, float) {
  for (i64 r = 0; r < BT; ++r) {  // checked before the parallel region, which cannot throw
    SB_CHECK(targets[r] >= 0, "crossentropy_shard: negative target {} at row {}", targets[r], r);
  }
  parallel_for_each("sb::crossentropy_shard_partials", BT, [=](i64 r) {
    const float* x = logits + r * V;
    double sum = 0;
    for (i64 i = 0; i < V; ++i) sum += std::exp(x[i] - row_max[r]);
    sumexp[r] = static_cast<float>(sum);
    const i64 j = static_cast<i64>(targets[r]) - vocab_begin;
    target_logit[r] = j >= 0 && j < V ? x[j] : 0.0f;
  });
}

SB_DECLARE_CROSSENTROPY_SHARD_FINISH(float, float) {
  parallel_for_each("sb::crossentropy_shard_finish", BT, [=](i64 r) {
    const float* x = logits + r * V;
    float* p = probs + r * V;
    const float inv_sum = 1.0f / sumexp[r];
    for (i64 i = 0; i < V; ++i) p[i] = std::exp(x[i] - row_max[r]) * inv_sum;
    losses[r] = std::log(sumexp[r]) - (target_logit[r] - row_max[r]);
  });
}

SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD(float, float) {
  parallel_for_each("sb::crossentropy_shard_backward", BT, [=](i64 r) {
    const float* p = probs + r * V;
    float* dx = dlogits + r * V;
    const float d = dlosses[r];
    for (i64 i = 0; i < V; ++i) dx[i] += p[i] * d;
    const i64 j = static_cast<i64>(targets[r]) - vocab_begin;
    if (j >= 0 && j < V) dx[j] -= d;
  });
}

}  // namespace sb::kernels::cpu
