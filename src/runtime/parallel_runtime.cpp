// SPDX-License-Identifier: Apache-2.0
// Kokkos and OpenBLAS set-up for one process, with the guard against a second set-up.
// Leaves out thread pinning: OMP_PROC_BIND / OMP_PLACES stay the caller's choice.
#include "runtime/parallel_runtime.hpp"

#include <cblas.h>

#include <Kokkos_Core.hpp>
#include <atomic>

#include "core/check.hpp"

namespace sb {
namespace {

// Process state Kokkos imposes on us: it may be initialised at most once per process.
enum class RuntimeState : int { never_started, running, finished };
std::atomic<RuntimeState> runtime_state{RuntimeState::never_started};

}  // namespace

ParallelRuntime::ParallelRuntime(int threads) : threads_(threads) {
  SB_CHECK(threads >= 1, "ParallelRuntime needs at least one thread, got {}", threads);
  RuntimeState expected = RuntimeState::never_started;
  if (!runtime_state.compare_exchange_strong(expected, RuntimeState::running)) {
    if (expected == RuntimeState::running)
      throw Error("a second sb::ParallelRuntime was created while one is alive: create one "
                  "per process and pass it on");
    throw Error("sb::ParallelRuntime was created after an earlier one was destroyed: Kokkos "
                "cannot be re-initialised in one process after Kokkos::finalize");
  }
  if (Kokkos::is_initialized()) {
    runtime_state = RuntimeState::never_started;
    throw Error("Kokkos was initialised outside sb::ParallelRuntime; let the runtime own it");
  }
  Kokkos::InitArguments arguments;
  arguments.num_threads = threads;
  // Kokkos warns on stdout, once per rank, when OMP_PROC_BIND is unset; we leave it unset on
  // purpose for several ranks on a node (launch/mpirun_environment.cpp) and the run's context
  // records OMP_PROC_BIND and OMP_PLACES instead. Setting the variable here would silence it
  // without binding anything: libgomp read the environment when it loaded.
  arguments.disable_warnings = true;
  try {
    Kokkos::initialize(arguments);
  } catch (...) {
    runtime_state = RuntimeState::never_started;
    throw;
  }
  openblas_set_num_threads(threads);
}

ParallelRuntime::~ParallelRuntime() {
  Kokkos::finalize();
  runtime_state = RuntimeState::finished;
}

std::string ParallelRuntime::kokkos_version() {
  return fmt::format("{}.{}.{}", KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100,
                     KOKKOS_VERSION % 100);
}

std::string ParallelRuntime::blas_description() {
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return config;  // already starts with "OpenBLAS <version>"
}

int ParallelRuntime::blas_threads() { return openblas_get_num_threads(); }

}  // namespace sb
