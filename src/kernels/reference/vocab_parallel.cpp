// SPDX-License-Identifier: Apache-2.0
// Reference vocabulary-parallel embedding and cross-entropy (Megatron tensor parallelism): each
// kernel works on one rank's vocabulary shard; the all-reduces between them are the caller's.
// Leaves out threading and communication.
#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_EMBEDDING_SHARD_FORWARD(T, T) {
  for (i64 bt = 0; bt < B * T_; ++bt) {
    const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
    const bool mine = row >= 0 && row < V;
    const T* wpe_row = wpe ? wpe + (bt % T_) * C : nullptr;
    for (i64 c = 0; c < C; ++c) {
      T value = mine ? wte[row * C + c] : T(0);
      if (wpe_row) value += wpe_row[c];
      out[bt * C + c] = value;
    }
  }
}

template <class T>
SB_DECLARE_EMBEDDING_SHARD_BACKWARD(T, T) {
  for (i64 bt = 0; bt < B * T_; ++bt) {
    const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
    const T* dout_row = dout + bt * C;
    if (row >= 0 && row < V)
      for (i64 c = 0; c < C; ++c) dwte[row * C + c] += dout_row[c];
    if (dwpe)
      for (i64 c = 0; c < C; ++c) dwpe[(bt % T_) * C + c] += dout_row[c];
  }
}

template <class T>
SB_DECLARE_CROSSENTROPY_SHARD_MAX(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const T* x = logits + r * V;
    T m = -INFINITY;
    for (i64 i = 0; i < V; ++i) m = std::max(m, x[i]);
    row_max[r] = m;
  }
}

template <class T>
SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const T* x = logits + r * V;
    double sum = 0;
    for (i64 i = 0; i < V; ++i) sum += std::exp(x[i] - row_max[r]);
    sumexp[r] = static_cast<T>(sum);
    SB_CHECK(targets[r] >= 0, "crossentropy_shard: negative target {} at row {}", targets[r], r);
    const i64 j = static_cast<i64>(targets[r]) - vocab_begin;
    target_logit[r] = j >= 0 && j < V ? x[j] : T(0);
  }
}

template <class T>
SB_DECLARE_CROSSENTROPY_SHARD_FINISH(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const T* x = logits + r * V;
    T* p = probs + r * V;
    for (i64 i = 0; i < V; ++i) p[i] = static_cast<T>(std::exp(x[i] - row_max[r]) / sumexp[r]);
    losses[r] = static_cast<T>(std::log(sumexp[r]) - (target_logit[r] - row_max[r]));
  }
}

template <class T>
SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const T* p = probs + r * V;
    T* dx = dlogits + r * V;
    const T d = dlosses[r];
    for (i64 i = 0; i < V; ++i) dx[i] += p[i] * d;
    const i64 j = static_cast<i64>(targets[r]) - vocab_begin;
    if (j >= 0 && j < V) dx[j] -= d;
  }
}

#define SB_INSTANTIATE(name, DECLARE) \
  template DECLARE(float, float);          \
  template DECLARE(double, double);
SB_INSTANTIATE(embedding_shard_forward, SB_DECLARE_EMBEDDING_SHARD_FORWARD)
SB_INSTANTIATE(embedding_shard_backward, SB_DECLARE_EMBEDDING_SHARD_BACKWARD)
SB_INSTANTIATE(crossentropy_shard_max, SB_DECLARE_CROSSENTROPY_SHARD_MAX)
SB_INSTANTIATE(crossentropy_shard_partials, SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS)
SB_INSTANTIATE(crossentropy_shard_finish, SB_DECLARE_CROSSENTROPY_SHARD_FINISH)
SB_INSTANTIATE(crossentropy_shard_backward, SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::reference
