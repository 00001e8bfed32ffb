// SPDX-License-Identifier: Apache-2.0
// Reference token + position embedding: one row copy per token, the ground truth.
// Leaves out threading and any de-duplication of repeated tokens in backward.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_EMBEDDING_FORWARD(T, T) {
  for (i64 b = 0; b < B; ++b) {
    for (i64 t = 0; t < T_; ++t) {
      T* out_row = out + (b * T_ + t) * C;
      const T* wte_row = wte + static_cast<i64>(tokens[b * T_ + t]) * C;
      const T* wpe_row = wpe + t * C;
      for (i64 c = 0; c < C; ++c) out_row[c] = wte_row[c] + wpe_row[c];
    }
  }
}

template <class T>
SB_DECLARE_EMBEDDING_BACKWARD(T, T) {
  for (i64 b = 0; b < B; ++b) {
    for (i64 t = 0; t < T_; ++t) {
      const T* dout_row = dout + (b * T_ + t) * C;
      T* dwte_row = dwte + static_cast<i64>(tokens[b * T_ + t]) * C;
      T* dwpe_row = dwpe + t * C;
      for (i64 c = 0; c < C; ++c) {
        dwte_row[c] += dout_row[c];
        dwpe_row[c] += dout_row[c];
      }
    }
  }
}

template SB_DECLARE_EMBEDDING_FORWARD(float, float);
template SB_DECLARE_EMBEDDING_FORWARD(double, double);
template SB_DECLARE_EMBEDDING_BACKWARD(float, float);
template SB_DECLARE_EMBEDDING_BACKWARD(double, double);

}  // namespace sb::kernels::reference
