// SPDX-License-Identifier: Apache-2.0
// NativeStorageKernels<bf16> and <fp16> of the cuda back-end: the table StorageKernels<S> calls
// for the GPT's kernels on Backend::cuda. Leaves out float (StorageKernels<float> calls the
// float KernelTable directly).
#include "kernels/kernels.hpp"
#include "kernels/storage_kernels.hpp"

namespace sb::kernels::cuda {

template <class S>
const NativeStorageKernels<S>& native_storage_kernels() {
#define SB_NATIVE_ENTRY(name, POINTER) &native::name<S>,
  static const NativeStorageKernels<S> table{SB_FOR_EACH_NATIVE_STORAGE_KERNEL(SB_NATIVE_ENTRY)};
#undef SB_NATIVE_ENTRY
  return table;
}

template const NativeStorageKernels<bf16>& native_storage_kernels<bf16>();
template const NativeStorageKernels<fp16>& native_storage_kernels<fp16>();

}  // namespace sb::kernels::cuda
