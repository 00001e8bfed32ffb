// SPDX-License-Identifier: Apache-2.0
// Reference causal multi-head self-attention, one (batch, position, head) row at a time.
// Leaves out threading, BLAS and flash-style tiling; backward uses one local row buffer.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_ATTENTION_FORWARD(T, T) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  const i64 hs = C / NH, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (i64 b = 0; b < B; ++b) {
    for (i64 t = 0; t < T_; ++t) {
      for (i64 h = 0; h < NH; ++h) {
        const T* q = qkv + (b * T_ + t) * C3 + h * hs;
        T* att_row = att + ((b * NH + h) * T_ + t) * T_;
        T max_score = -INFINITY;
        for (i64 t2 = 0; t2 <= t; ++t2) {
          const T* k = qkv + (b * T_ + t2) * C3 + C + h * hs;
          T score = 0;
          for (i64 i = 0; i < hs; ++i) score += q[i] * k[i];
          att_row[t2] = score * scale;
          max_score = std::max(max_score, att_row[t2]);
        }
        T sum = 0;
        for (i64 t2 = 0; t2 <= t; ++t2) {
          att_row[t2] = std::exp(att_row[t2] - max_score);
          sum += att_row[t2];
        }
        for (i64 t2 = 0; t2 <= t; ++t2) att_row[t2] /= sum;
        for (i64 t2 = t + 1; t2 < T_; ++t2) att_row[t2] = 0;

        T* o = out + (b * T_ + t) * C + h * hs;
        for (i64 i = 0; i < hs; ++i) o[i] = 0;
        for (i64 t2 = 0; t2 <= t; ++t2) {
          const T* v = qkv + (b * T_ + t2) * C3 + 2 * C + h * hs;
          for (i64 i = 0; i < hs; ++i) o[i] += att_row[t2] * v[i];
        }
      }
    }
  }
}

// Per row: datt = dout . v; dpreatt = att (datt - sum(att datt)) (softmax backward), times
// scale; then dq += dpreatt k, dk += dpreatt q, dv += att dout.
template <class T>
SB_DECLARE_ATTENTION_BACKWARD(T, T) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  const i64 hs = C / NH, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  std::vector<T> datt(static_cast<std::size_t>(T_));
  for (i64 b = 0; b < B; ++b) {
    for (i64 t = 0; t < T_; ++t) {
      for (i64 h = 0; h < NH; ++h) {
        const T* att_row = att + ((b * NH + h) * T_ + t) * T_;
        const T* dy = dout + (b * T_ + t) * C + h * hs;
        const T* q = qkv + (b * T_ + t) * C3 + h * hs;
        T* dq = dqkv + (b * T_ + t) * C3 + h * hs;
        T weighted_sum = 0;
        for (i64 t2 = 0; t2 <= t; ++t2) {
          const T* v = qkv + (b * T_ + t2) * C3 + 2 * C + h * hs;
          T* dv = dqkv + (b * T_ + t2) * C3 + 2 * C + h * hs;
          T d = 0;
          for (i64 i = 0; i < hs; ++i) {
            d += dy[i] * v[i];
            dv[i] += att_row[t2] * dy[i];
          }
          datt[t2] = d;
          weighted_sum += att_row[t2] * d;
        }
        for (i64 t2 = 0; t2 <= t; ++t2) {
          const T dpreatt = att_row[t2] * (datt[t2] - weighted_sum) * scale;
          const T* k = qkv + (b * T_ + t2) * C3 + C + h * hs;
          T* dk = dqkv + (b * T_ + t2) * C3 + C + h * hs;
          for (i64 i = 0; i < hs; ++i) {
            dq[i] += dpreatt * k[i];
            dk[i] += dpreatt * q[i];
          }
        }
      }
    }
  }
}

template SB_DECLARE_ATTENTION_FORWARD(float, float);
template SB_DECLARE_ATTENTION_FORWARD(double, double);
template SB_DECLARE_ATTENTION_BACKWARD(float, float);
template SB_DECLARE_ATTENTION_BACKWARD(double, double);

}  // namespace sb::kernels::reference
