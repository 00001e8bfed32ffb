// SPDX-License-Identifier: Apache-2.0
// cpu sparse × dense product: the output rows spread over the host threads, each nonzero
// adding a scaled input row to its output row, the inner loop over P contiguous (8-wide with
// AVX2). Leaves out blocking over P: a pruned convolution's P (output pixels of one image,
// 49..784 here) fits in the caches beside one output row.
#include <algorithm>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/sparse_kernels.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
void add_scaled_row(float* __restrict out, const float* __restrict inp, float value, i64 P) {
  for (i64 p = 0; p < P; ++p) out[p] += value * inp[p];
}

}  // namespace

SB_DECLARE_CSR_MATMUL_FORWARD {
  (void)K;
  if (OC == 0 || P == 0) return;
  parallel_for_each("sb::csr_matmul_forward", OC, [=](i64 o) {
    float* row = out + o * P;
    std::fill(row, row + P, bias ? bias[o] : 0.0f);
    for (std::int32_t j = row_start[o]; j < row_start[o + 1]; ++j) add_scaled_row(row, inp + col[j] * P, values[j], P);
  });
}

}  // namespace sb::kernels::cpu
