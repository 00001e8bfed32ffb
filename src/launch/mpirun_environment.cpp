// SPDX-License-Identifier: Apache-2.0
// setenv before posix_spawn: the child inherits this process's environment.
#include "launch/mpirun_environment.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/cpu_affinity.hpp"

namespace sb::launch {

OpenMpBinding openmp_binding(std::int64_t ranks_sharing_cpus) {
  return ranks_sharing_cpus <= 1 ? OpenMpBinding{"spread", "threads"} : OpenMpBinding{"false", ""};
}

void prepare_mpirun_environment(std::int64_t world_size) {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  // mpirun starts on the CPUs this process started on (spawn_and_wait), not the one core
  // libgomp bound our main thread to; it counts those.
  if (world_size > start_cpu_count())
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  // Open MPI binds each rank to one core by default, which would put all of a rank's OpenMP
  // threads on that core (measured: gpt-tiny 729 ms/step instead of 370 with 2 threads).
  setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 0);
  // OpenMP reads these when a process starts; mpirun without binding gives every rank the same
  // mask. A value the user set is kept.
  static const bool user_binds = std::getenv("OMP_PROC_BIND") != nullptr;
  static const bool user_places = std::getenv("OMP_PLACES") != nullptr;
  const OpenMpBinding binding = openmp_binding(world_size);
  if (!user_binds) setenv("OMP_PROC_BIND", binding.proc_bind, 1);
  if (!user_places) {
    if (*binding.places != '\0')
      setenv("OMP_PLACES", binding.places, 1);
    else
      unsetenv("OMP_PLACES");
  }
  // mpirun gives ranks a pseudo-terminal; tell them what our own stdout really is.
  setenv("SB_PROGRESS", isatty(fileno(stdout)) ? "terminal" : "lines", 0);
}

}  // namespace sb::launch
