// SPDX-License-Identifier: Apache-2.0
// A weight matrix in the compute form of sparse inference: compressed sparse rows with int32
// column indices, the form kernels/sparse_kernels.hpp csr_matmul_forward reads (the stored layouts of
// sparse_storage.hpp pack indices tighter; they are decoded into this once). Leaves out the
// layers that use it (sparse_resnet.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/sparse_kernels.hpp"

namespace sb::compress {

struct CsrMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int32_t> row_start;  // (rows + 1)
  std::vector<std::int32_t> col;        // (nnz), ascending within a row
  std::vector<float> values;            // (nnz)

  // dense (rows, cols): every nonzero kept.
  static CsrMatrix from_dense(const float* dense, std::int64_t rows, std::int64_t cols);
  std::int64_t nonzeros() const { return static_cast<std::int64_t>(values.size()); }
  // inp (cols, P), bias (rows) or nullptr -> out (rows, P) = this · inp + bias   (OVERWRITTEN)
  void multiply(float* out, const float* inp, const float* bias, std::int64_t P, const kernels::SparseKernelTable& k) const {
    k.csr_matmul_forward(out, row_start.data(), col.data(), values.data(), inp, bias, rows, cols, P);
  }
};

}  // namespace sb::compress
