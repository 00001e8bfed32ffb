// SPDX-License-Identifier: Apache-2.0
// The environment a spawned `mpirun` needs on these machines: root allowed, oversubscription
// when ranks outnumber cores, no core binding by Open MPI, OpenMP placement per rank count, the
// progress mode of our stdout. Leaves out starting it (child_process.hpp).
#pragma once

#include <cstdint>

namespace sb::launch {

// OpenMP placement for ranks that share one affinity mask: one rank pins its threads, spread
// over its mask's hardware threads (Kokkos's advice); several leave placement to the kernel,
// as every rank's libgomp would otherwise bind its first thread to the same first place
// (measured: resnet-mini dp=2 400 ms/step instead of 204). places empty: OMP_PLACES unset.
struct OpenMpBinding {
  const char* proc_bind;
  const char* places;
};
OpenMpBinding openmp_binding(std::int64_t ranks_sharing_cpus);

// Sets what is unset (a value the user exported is kept) before spawning `mpirun -np world_size`
// on this node.
void prepare_mpirun_environment(std::int64_t world_size);

}  // namespace sb::launch
