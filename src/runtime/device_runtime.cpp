// SPDX-License-Identifier: Apache-2.0
// The GPU runtime queries behind device_runtime.hpp: CUDA runtime calls in builds with CUDA,
// answers for "no GPU" elsewhere.
#include "runtime/device_runtime.hpp"

#include <fmt/format.h>

#ifdef SB_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#endif

namespace sb {

int visible_gpu_count() {
#ifdef SB_HAVE_CUDA
  return kernels::cuda::visible_device_count();
#else
  return 0;
#endif
}

void synchronize_device(Device device) {
  if (device == Device::cpu) return;
#ifdef SB_HAVE_CUDA
  SB_CUDA_CHECK(cudaDeviceSynchronize());
#endif
}

GpuDescription current_gpu_description() {
  GpuDescription d;
#ifdef SB_HAVE_CUDA
  if (visible_gpu_count() == 0) return d;
  int device = 0, driver = 0;
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDevice(&device));
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  SB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  d.model = prop.name;
  d.driver = fmt::format("CUDA {}.{}", driver / 1000, (driver % 1000) / 10);
#endif
  return d;
}

}  // namespace sb
