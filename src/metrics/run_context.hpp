// SPDX-License-Identifier: Apache-2.0
// What a measurement ran on (hosts, CPU, libraries, build), stored in /runs/<id>/context so
// every number carries its context. Leaves out GPU queries (the CUDA back-end adds them).
#pragma once

#include <mpi.h>

#include <string>

#include "io/attr_value.hpp"

namespace sb::metrics {

// Keys, in order: hostnames, host_count, cpu_model, cores, threads, cpu_scaling_governor,
// gpu_model, driver, mpi_library, mpi_standard, nccl, cuda_aware_mpi, hdf5, kokkos, blas,
// blas_threading, blas_library, onednn, cpu_isa, conv2d_fp32, conv2d_bf16, int8_matmul, fp16_convert, compiler,
// build_type, git_sha, omp_proc_bind, omp_places.
// With comm == MPI_COMM_NULL (or MPI not initialised) only this host is listed; otherwise the
// call is collective over comm and every rank gets the sorted, distinct hostnames of all ranks.
// The MPI library string comes from MPI_Get_library_version, which MPI-3 allows before
// MPI_Init, so this works in any process.
io::Attributes collect_run_context(int threads, MPI_Comm comm = MPI_COMM_NULL);

// The current UTC time as "2026-11-29T14:03:07Z".
std::string utc_now_iso8601();

}  // namespace sb::metrics
