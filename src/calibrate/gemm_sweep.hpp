// SPDX-License-Identifier: Apache-2.0
// The GEMM part of `scalebench calibrate --gemm`: the trainer's own matmul_forward (through
// StorageKernels<S>, so 16-bit storage pays its widening and rounding as training does) at
// square sizes per precision, run by every rank at once, as a node's devices would be during
// training. Leaves out matmul_backward, conv2d and the CUDA back-end (bench/bench_cuda_gemm).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "io/gemm_table.hpp"

namespace sb::calibrate {

// One row per (precision, size) for fp32, bf16, fp16: the slowest rank's mean time per call in
// the fastest of three rounds (measure/timing.hpp). Collective over `comm`; every rank returns the same rows. Needs
// the process's ParallelRuntime alive (its thread count is `threads`).
std::vector<io::GemmRow> run_gemm_sweep(MPI_Comm comm, int threads, const std::vector<std::int64_t>& sizes);

}  // namespace sb::calibrate
