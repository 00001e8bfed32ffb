// setenv before posix_spawn: the child inherits this process's environment.
#include "launch/mpirun_environment.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/cpu_affinity.hpp"

namespace sb::launch {

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
  // OpenMP reads these when a process starts. One rank: pin its threads (Kokkos's advice).
  // Several ranks on one node: every rank's libgomp would bind its first thread to the first
  // place, all ranks on one core (measured: resnet-mini dp=2 400 ms/step instead of 204), so
  // leave placement to the kernel. A value the user set is kept.
  static const bool user_binds = std::getenv("OMP_PROC_BIND") != nullptr;
  static const bool user_places = std::getenv("OMP_PLACES") != nullptr;
  if (!user_binds) setenv("OMP_PROC_BIND", world_size == 1 ? "spread" : "false", 1);
  if (!user_places) {
    if (world_size == 1)
      setenv("OMP_PLACES", "threads", 1);
    else
      unsetenv("OMP_PLACES");
  }
  // mpirun gives ranks a pseudo-terminal; tell them what our own stdout really is.
  setenv("SB_PROGRESS", isatty(fileno(stdout)) ? "terminal" : "lines", 0);
}

}  // namespace sb::launch
