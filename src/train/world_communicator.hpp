// SPDX-License-Identifier: Apache-2.0
// The world communicator of a training run on its device: MPI's on device cpu; on device cuda
// the rank first takes its node-local GPU (before anything is allocated), then MPI's world is
// wrapped in NCCL (device buffers through NCCL, host buffers through MPI), and the process
// grid's split() gives NCCL communicators for dp, tp and pp. Leaves out the grid itself
// (parallel/process_grid.hpp).
#pragma once

#include <memory>
#include <string>

#include "core/tensor.hpp"
#include "parallel/communicator.hpp"

namespace sb::train {

// `source` names the config (for the message when device cuda has no GPU to run on).
std::unique_ptr<parallel::Communicator> make_world_communicator(Device device, const std::string& source);

}  // namespace sb::train
