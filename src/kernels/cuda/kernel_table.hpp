// SPDX-License-Identifier: Apache-2.0
// The cuda backend as a KernelTable: one function pointer per kernel of kernels.hpp. The
// engine's dispatch returns it for Backend::cuda; the GPU tests and benchmarks, which link no
// cpu back-end (no Kokkos, OpenBLAS or MPI on a bare GPU node), take it from here directly.
#pragma once

#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

inline const KernelTable& cuda_kernel_table() {
#define SB_CUDA_ENTRY(name, DECLARE) &cuda::name,
  static const KernelTable table{SB_FOR_EACH_KERNEL(SB_CUDA_ENTRY) SB_FOR_EACH_CONVERSION_KERNEL(SB_CUDA_ENTRY)
                                 SB_FOR_EACH_INT8_KERNEL(SB_CUDA_ENTRY)};
#undef SB_CUDA_ENTRY
  return table;
}

}  // namespace sb::kernels::cuda
