// SPDX-License-Identifier: Apache-2.0
// MPI's world, or on device cuda a GPU per rank and NCCL around MPI.
#include "train/world_communicator.hpp"

#include "core/check.hpp"
#include "parallel/nccl_communicator.hpp"
#include "runtime/device_runtime.hpp"

namespace sb::train {

std::unique_ptr<parallel::Communicator> make_world_communicator(Device device, const std::string& source) {
  if (device == Device::cpu) return parallel::make_mpi_world_communicator();
  SB_USER_CHECK(visible_gpu_count() > 0, "{}: device cuda, but no CUDA device visible on this machine; use device: cpu",
                source);
  SB_USER_CHECK(parallel::nccl_compiled(),
                "{}: device cuda needs NCCL between ranks, and this build has none (reconfigure with NCCL "
                "installed, SB_ENABLE_NCCL)", source);
  parallel::select_local_device();  // before the MPI world (and anything else) touches the GPU
  return parallel::make_nccl_communicator(parallel::make_mpi_world_communicator());
}

}  // namespace sb::train
