// SPDX-License-Identifier: Apache-2.0
// What the trainer and the command line ask of the GPU runtime without including CUDA: how many
// GPUs this process sees, what the current one is, and waiting for its queued work (so that a
// host timer around a step measures the GPU's work too). Leaves out device choice
// (parallel/nccl_communicator.hpp: select_local_device) and memory (core/device_memory.hpp).
#pragma once

#include <string>

#include "core/tensor.hpp"

namespace sb {

// GPUs the CUDA runtime sees (CUDA_VISIBLE_DEVICES applies); 0 without a GPU or in a build
// without CUDA.
int visible_gpu_count();

// Device cpu: nothing (host work is done when the call returns; Kokkos fences separately).
// Device cuda: cudaDeviceSynchronize on the current device, which waits for every stream of
// it (the kernels' stream and NCCL's).
void synchronize_device(Device device);

// The current GPU: its name ("NVIDIA H200") and the CUDA version its driver supports
// ("CUDA 12.8"); "none" each without a GPU.
struct GpuDescription {
  std::string model = "none", driver = "none";
};
GpuDescription current_gpu_description();

}  // namespace sb
