// SPDX-License-Identifier: Apache-2.0
// Fully connected layer on OpenBLAS sgemm (row-major), bias and dbias with Kokkos loops.
// Leaves out our own GEMM micro-kernels: OpenBLAS threads itself over the whole product.
#include <cblas.h>

#include <climits>

#include "kernels/cpu/column_sums.hpp"
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

// Columns summed per dbias task: 64 floats, four cache lines of every row of dout.

void check_blas_extents(i64 BT, i64 C, i64 OC) {
  SB_CHECK(BT >= 0 && C >= 0 && OC >= 0 && BT <= INT_MAX && C <= INT_MAX && OC <= INT_MAX,
           "matmul: extents BT={} C={} OC={} do not fit a 32-bit BLAS", BT, C, OC);
}

}  // namespace

// out = inp . weight^T (+ bias): bias is copied into every row of out first, then sgemm
// accumulates with beta = 1, so out is written once and read once.
SB_DECLARE_MATMUL_FORWARD(float, float) {
  check_blas_extents(BT, C, OC);
  if (bias) {
    parallel_for_each("sb::matmul_forward::bias", BT,
                      [=](i64 r) { std::copy(bias, bias + OC, out + r * OC); });
  }
  if (BT == 0 || OC == 0) return;
  if (C == 0) {
    if (!bias) std::fill(out, out + BT * OC, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(BT), static_cast<int>(OC),
              static_cast<int>(C), 1.0f, inp, static_cast<int>(C), weight, static_cast<int>(C),
              bias ? 1.0f : 0.0f, out, static_cast<int>(OC));
}

// dinp += dout . weight, dweight += dout^T . inp (beta = 1), dbias += column sums of dout.
SB_DECLARE_MATMUL_BACKWARD(float, float) {
  check_blas_extents(BT, C, OC);
  if (BT == 0 || OC == 0) return;
  const int bt = static_cast<int>(BT), c = static_cast<int>(C), oc = static_cast<int>(OC);
  if (C > 0) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bt, c, oc, 1.0f, dout, oc, weight, c,
                1.0f, dinp, c);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, oc, c, bt, 1.0f, dout, oc, inp, c, 1.0f,
                dweight, c);
  }
  if (!dbias) return;
  add_column_sums("sb::matmul_backward::dbias", dbias, dout, BT, OC);
}

}  // namespace sb::kernels::cpu
