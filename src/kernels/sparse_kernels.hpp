// SPDX-License-Identifier: Apache-2.0
// The sparse inference kernel of pruned models (compress/sparse_resnet.hpp): a weight matrix in
// compressed sparse rows times dense columns, the GEMM of a pruned linear layer or of a pruned
// convolution's im2col. Declared once, implemented by the reference (plain loops, the ground
// truth) and cpu (threaded, vectorised) trees like kernels.hpp's. Leaves out the GPU: sparse
// inference is measured on the CPU, and cuda's table entry refuses by name.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace sb::kernels {

// row_start (OC+1), col (nnz) in [0, K) ascending within a row, values (nnz), inp (K, P),
// bias (OC) or nullptr
//   -> out (OC, P) = bias[o] (or 0) + Σ_{j in row o, ascending} values[j] · inp[col[j], p]
//      (OVERWRITTEN; the same summation order on every backend, so results differ only by
//      fused multiply-adds)
#define SB_DECLARE_CSR_MATMUL_FORWARD                                                             \
  void csr_matmul_forward(float* out, const std::int32_t* row_start, const std::int32_t* col,     \
                          const float* values, const float* inp, const float* bias, i64 OC, i64 K, \
                          i64 P)
namespace reference {
SB_DECLARE_CSR_MATMUL_FORWARD;
}
namespace cpu {
SB_DECLARE_CSR_MATMUL_FORWARD;
}

struct SparseKernelTable {
  decltype(&cpu::csr_matmul_forward) csr_matmul_forward;
};

// reference or cpu; cuda throws UserError ("sparse inference runs on the cpu or reference
// back-end").
const SparseKernelTable& sparse_kernels_for(Backend backend);

}  // namespace sb::kernels
