// SPDX-License-Identifier: Apache-2.0
// Reference sparse × dense product: one output at a time, the row's nonzeros in stored order;
// the ground truth the cpu and cuda kernels are compared with. Leaves out vectorising and
// threading.
#include "kernels/sparse_kernels.hpp"

namespace sb::kernels::reference {

SB_DECLARE_CSR_MATMUL_FORWARD {
  (void)K;  // col[j] < K: the caller's promise, checked where the matrix is built
  for (i64 o = 0; o < OC; ++o)
    for (i64 p = 0; p < P; ++p) {
      float sum = bias ? bias[o] : 0.0f;
      for (std::int32_t j = row_start[o]; j < row_start[o + 1]; ++j) sum += values[j] * inp[col[j] * P + p];
      out[o * P + p] = sum;
    }
}

}  // namespace sb::kernels::reference
