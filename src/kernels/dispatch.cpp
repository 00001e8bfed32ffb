// SPDX-License-Identifier: Apache-2.0
// Runtime selection of a kernel backend.
#include "core/check.hpp"
#include "core/tensor.hpp"
#include "kernels/kernels.hpp"
#ifdef SB_HAVE_CUDA
#include "kernels/cuda/kernel_table.hpp"
#endif

namespace sb::kernels {

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::reference: return "reference";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "unknown";
}

Backend parse_backend(std::string_view name) {
  if (name == "reference") return Backend::reference;
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda") return Backend::cuda;
  throw UserError(fmt::format("unknown kernel backend '{}' (known: reference, cpu, cuda)", name));
}

Device memory_device(Backend backend) { return backend == Backend::cuda ? Device::cuda : Device::cpu; }

const KernelTable& kernels_for(Backend backend) {
#define SB_REFERENCE_ENTRY(name, DECLARE) &reference::name<float>,
#define SB_REFERENCE_PLAIN_ENTRY(name, DECLARE) &reference::name,
#define SB_CPU_ENTRY(name, DECLARE) &cpu::name,
  static const KernelTable reference_table{SB_FOR_EACH_KERNEL(SB_REFERENCE_ENTRY)
                                               SB_FOR_EACH_CONVERSION_KERNEL(SB_REFERENCE_PLAIN_ENTRY)
                                               SB_FOR_EACH_INT8_KERNEL(SB_REFERENCE_PLAIN_ENTRY)};
  static const KernelTable cpu_table{SB_FOR_EACH_KERNEL(SB_CPU_ENTRY)
                                         SB_FOR_EACH_CONVERSION_KERNEL(SB_CPU_ENTRY)
                                         SB_FOR_EACH_INT8_KERNEL(SB_CPU_ENTRY)};
#undef SB_REFERENCE_ENTRY
#undef SB_REFERENCE_PLAIN_ENTRY
#undef SB_CPU_ENTRY
  switch (backend) {
    case Backend::reference: return reference_table;
    case Backend::cpu: return cpu_table;
    case Backend::cuda:
#ifdef SB_HAVE_CUDA
      return cuda::cuda_kernel_table();
#else
      break;
#endif
  }
  throw UserError("not compiled: cuda (this build has no CUDA kernels; use device: cpu)");
}

}  // namespace sb::kernels
