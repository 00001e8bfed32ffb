// SPDX-License-Identifier: Apache-2.0
// The process-wide parallel runtime: Kokkos (OpenMP host space) and OpenBLAS threads, set up
// once and torn down once. Leaves out MPI and CUDA, which have their own owners.
#pragma once

#include <string>

namespace sb {

// RAII owner of Kokkos and the OpenBLAS thread count; exactly one per process.
//
// Kokkos cannot be initialised again in a process after it was finalised, so a second
// ParallelRuntime - alive at the same time, or created after the first was destroyed -
// throws sb::Error instead of failing inside Kokkos. Create it at the top of main (or in a
// test environment) and pass `threads()` to whatever needs the count. The environment
// (OMP_PROC_BIND, OMP_PLACES) is left as the caller set it.
class ParallelRuntime {
 public:
  // threads >= 1: Kokkos OpenMP threads and OpenBLAS threads.
  explicit ParallelRuntime(int threads);
  ~ParallelRuntime();
  ParallelRuntime(const ParallelRuntime&) = delete;
  ParallelRuntime& operator=(const ParallelRuntime&) = delete;
  ParallelRuntime(ParallelRuntime&&) = delete;
  ParallelRuntime& operator=(ParallelRuntime&&) = delete;

  int threads() const { return threads_; }

  // "3.4.1", from KOKKOS_VERSION.
  static std::string kokkos_version();
  // OpenBLAS's own description: version, build options and the kernel it selected.
  static std::string blas_description();
  // Threads OpenBLAS will use for a call made outside a parallel region.
  static int blas_threads();

 private:
  int threads_;
};

}  // namespace sb
