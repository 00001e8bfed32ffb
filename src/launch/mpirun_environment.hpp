// The environment a spawned `mpirun` needs on these machines: root allowed, oversubscription
// when ranks outnumber cores, no core binding by Open MPI, OpenMP placement per rank count, the
// progress mode of our stdout. Leaves out starting it (child_process.hpp).
#pragma once

#include <cstdint>

namespace sb::launch {

// Sets what is unset (a value the user exported is kept) before spawning `mpirun -np world_size`
// on this node.
void prepare_mpirun_environment(std::int64_t world_size);

}  // namespace sb::launch
