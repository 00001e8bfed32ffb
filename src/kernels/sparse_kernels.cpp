// SPDX-License-Identifier: Apache-2.0
// The sparse kernel table per backend (see sparse_kernels.hpp).
#include "kernels/sparse_kernels.hpp"

#include "core/check.hpp"

namespace sb::kernels {

const SparseKernelTable& sparse_kernels_for(Backend backend) {
  static const SparseKernelTable reference_table{&reference::csr_matmul_forward};
  static const SparseKernelTable cpu_table{&cpu::csr_matmul_forward};
  switch (backend) {
    case Backend::reference: return reference_table;
    case Backend::cpu: return cpu_table;
    case Backend::cuda: break;
  }
  throw UserError("sparse inference runs on the cpu or reference back-end, not cuda");
}

}  // namespace sb::kernels
