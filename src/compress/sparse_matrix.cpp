// SPDX-License-Identifier: Apache-2.0
// Building the CSR compute form (see sparse_matrix.hpp).
#include "compress/sparse_matrix.hpp"

#include "core/check.hpp"

namespace sb::compress {

CsrMatrix CsrMatrix::from_dense(const float* dense, std::int64_t rows, std::int64_t cols) {
  SB_CHECK(rows > 0 && cols > 0 && cols <= 0x7fffffff, "CsrMatrix of shape ({}, {})", rows, cols);
  CsrMatrix m{rows, cols, {0}, {}, {}};
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      if (dense[r * cols + c] == 0.0f) continue;
      m.col.push_back(static_cast<std::int32_t>(c));
      m.values.push_back(dense[r * cols + c]);
    }
    SB_CHECK(m.values.size() <= 0x7fffffffu, "CsrMatrix ({}, {}): more nonzeros than int32 holds", rows, cols);
    m.row_start.push_back(static_cast<std::int32_t>(m.values.size()));
  }
  return m;
}

}  // namespace sb::compress
