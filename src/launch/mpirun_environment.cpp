// setenv before posix_spawn: the child inherits this process's environment.
#include "launch/mpirun_environment.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace sb::launch {

void prepare_mpirun_environment(std::int64_t world_size) {
  // With OMP_PROC_BIND set, libgomp pinned this process's main thread to one core when it
  // started; mpirun and the ranks would inherit that single core. Give them every core back.
  cpu_set_t all;
  CPU_ZERO(&all);
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  for (long cpu = 0; cpu < cpus && cpu < CPU_SETSIZE; ++cpu) CPU_SET(static_cast<int>(cpu), &all);
  sched_setaffinity(0, sizeof all, &all);  // the kernel keeps it within the allowed cpuset
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  if (world_size > static_cast<std::int64_t>(std::thread::hardware_concurrency()))
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
