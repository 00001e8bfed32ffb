// SPDX-License-Identifier: Apache-2.0
// Mixed precision's storage policy at the kernel boundary: the kernels a model calls with its
// activations, weights and activation gradients stored in S (float, bf16 or fp16), while the
// parameter gradients (fp32 main gradients, as Megatron-LM keeps them), LayerNorm and BatchNorm
// statistics, per-token losses and the cross-entropy's row statistics stay float. With S = float
// every call goes straight to the backend's float kernel. With a 16-bit S each call widens its
// 16-bit operands into float scratch (round-to-nearest-even is only ever needed on the way
// back), runs the backend's float kernel — so GEMMs, reductions and statistics accumulate in
// fp32 — and rounds the outputs it wrote back to S. That is what a tensor core does with bf16
// operands, and what PyTorch does on a CPU without native 16-bit arithmetic; the conversions cost
// time here that a GPU does not pay (the cost model carries the tensor-core ratio). On the cuda
// back-end the GPT's kernels are native instead (NativeStorageKernels below: 16-bit operands
// on tensor cores through cuBLASLt, float math in registers), and every other call widens into
// device scratch with the cuda conversion kernels. On the cpu back-end with bf16 S, the linear
// layer's GEMMs run as oneDNN bf16 matmuls (fp32 accumulation) where the CPU has AMX-BF16 or
// AVX512-BF16 (core/cpu_isa.hpp, decided once at construction); below that they widen too.
// On the cpu back-end the convolutions run as oneDNN primitives where oneDNN's ISA is AVX-512 or
// above (fp32, and the widened 16-bit ones), with bf16 operands where the CPU has AMX-BF16 or
// AVX512-BF16; below that the own kernels (conv2d.cpp). Leaves out fp16 GEMM instructions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernel_recorder.hpp"
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels {

// A value of S as float and back (host code; float is the identity).
inline float widen_value(float x) { return x; }
inline float widen_value(bf16 x) { return to_float(x); }
inline float widen_value(fp16 x) { return to_float(x); }

// "fp32" | "bf16" | "fp16": the precision a storage type stands for in configs and results.
template <class S>
constexpr const char* storage_name();
template <> constexpr const char* storage_name<float>() { return "fp32"; }
template <> constexpr const char* storage_name<bf16>() { return "bf16"; }
template <> constexpr const char* storage_name<fp16>() { return "fp16"; }

// The GPT's kernels with S storage as a back-end implements them natively
// (kernels.hpp's SB_FOR_EACH_NATIVE_STORAGE_KERNEL, declared there once with (S, float)): one
// pointer per kernel, of the type of cuda::native::name<S>. The cuda tree provides them for bf16
// and fp16 (kernels/cuda/storage_*.cu).
template <class S>
struct NativeStorageKernels {
#define SB_NATIVE_STORAGE_MEMBER(name, DECLARE) decltype(&cuda::native::name<S>) name;
  SB_FOR_EACH_NATIVE_STORAGE_KERNEL(SB_NATIVE_STORAGE_MEMBER)
#undef SB_NATIVE_STORAGE_MEMBER
};

namespace cpu {
class OnednnBf16Matmul;  // kernels/cpu/onednn_bf16_matmul.hpp
class OnednnConv2d;      // kernels/cpu/onednn_conv2d.hpp
}  // namespace cpu

namespace cuda {
// The cuda back-end's native 16-bit kernels (device pointers, the default context's stream);
// defined for bf16 and fp16 where CUDA is compiled in.
template <class S>
const NativeStorageKernels<S>& native_storage_kernels();
}  // namespace cuda

// Float scratch for one kernel call's widened operands: a bump allocator over tracked chunks
// (category workspace) on the back-end's device that keeps its chunks, so after the first step
// no call allocates.
class WideningScratch {
 public:
  WideningScratch(MemoryTracker& tracker, std::string label, Device device = Device::cpu);
  float* take(i64 count);  // 64-byte aligned; valid until release_all()
  void release_all() { used_chunk_ = 0, used_floats_ = 0; }

 private:
  MemoryTracker* tracker_;
  std::string label_;
  Device device_;
  std::vector<TrackedBuffer> chunks_;
  std::size_t used_chunk_ = 0;  // the chunk being filled
  i64 used_floats_ = 0;         // floats used in it
};

// A memset of a view: bytes written, no FLOPs (StorageKernels::zero, recorded as "fill").
inline KernelWork fill_work(i64 bytes) { return {0.0, as_double(bytes), as_double(bytes)}; }

template <class S>
class StorageKernels {
 public:
  // With a recorder every kernel call below (and zero) is logged there as it is made
  // (kernel_recorder.hpp); a record_only recorder's calls do not run.
  StorageKernels(Backend backend, MemoryTracker& tracker, KernelRecorder* recorder = nullptr);
  ~StorageKernels();
  StorageKernels(StorageKernels&&) noexcept;
  StorageKernels& operator=(StorageKernels&&) noexcept;

  // Whether matmul calls widen 16-bit operands to fp32 for the float GEMM: false for float S,
  // for the cuda native table, for the cpu's oneDNN bf16 matmuls and for its packed 16-bit GEMM.
  bool widens_gemms() const;
  // Whether matmul calls run the cpu's own AVX-512 GEMM that widens while it packs
  // (cpu/packed_matmul.hpp): fp16 S, and bf16 S without oneDNN bf16, where cpu_runs_avx512_kernels().
  bool packed_gemms() const { return packed_matmul_; }
  // Whether conv2d calls run as oneDNN primitives (cpu back-end, oneDNN at AVX-512 or above),
  // and whether those take the 16-bit operands directly (bf16 S with bf16 instructions).
  bool onednn_convolutions() const { return onednn_conv_ != nullptr; }
  bool native_convolutions() const { return native_conv_; }
  // Whether the elementwise kernels (BatchNorm's passes, ReLU, GELU, LayerNorm, residual) take
  // 16-bit operands as they lie (bf16 or fp16 S on the cpu back-end:
  // cpu/sixteen_bit_elementwise.hpp) rather than widened whole into scratch.
  bool native_elementwise() const { return host_sixteen_bit_; }

  // Whether calls run: false under a record_only recorder, whose model holds no memory.
  bool runs_kernels() const { return !recorder_ || recorder_->runs_kernels(); }
  // The calls from here on belong to the pipeline unit `unit` (for the recorder).
  void begin_unit(const char* unit);
  // data (bytes) = 0, on the back-end's device: the gradient views a backward accumulates into.
  void zero(void* data, i64 bytes);

  // inp (N) -> out (N), whole arrays (OVERWRITTEN)
  void widen(float* out, const S* inp, i64 N) const;
  void narrow(S* out, const float* inp, i64 N) const;

  // The kernels of kernels.hpp with S storage (SB_FOR_EACH_STORAGE_KERNEL, each declared from
  // its SB_DECLARE_ macro with (S, float)); shapes and semantics as there. Parameter gradients
  // (dweight, dbias, dwte, dwpe) and statistics (mean, rstd, running statistics, losses,
  // dlosses, row_max, sumexp, target_logit) are float; BatchNorm's channel sums double.
#define SB_STORAGE_KERNEL_MEMBER(name, DECLARE) DECLARE(S, float);
  SB_FOR_EACH_STORAGE_KERNEL(SB_STORAGE_KERNEL_MEMBER)
#undef SB_STORAGE_KERNEL_MEMBER

 private:
  const KernelTable* k_;
  Device device_;
  const NativeStorageKernels<S>* native_ = nullptr;  // 16-bit S on cuda: the GPT's kernels
  std::unique_ptr<WideningScratch> scratch_;  // 16-bit S only
  // bf16 S on a cpu with bf16 instructions; fp16 S, as bf16 pairs, on a cpu with AMX-BF16
  std::unique_ptr<cpu::OnednnBf16Matmul> onednn_matmul_;
  std::unique_ptr<WideningScratch> conv_scratch_;         // oneDNN's layouts and results
  std::unique_ptr<cpu::OnednnConv2d> onednn_conv_;        // cpu, oneDNN at AVX-512 or above
  bool native_conv_ = false;                              // bf16 S into onednn_conv_ directly
  bool packed_matmul_ = false;  // 16-bit S on the cpu: cpu/packed_matmul.hpp's GEMM
  bool host_sixteen_bit_ = false;  // bf16 or fp16 S on the cpu: the elementwise kernels take S as it lies
  KernelRecorder* recorder_ = nullptr;
};

extern template class StorageKernels<float>;
extern template class StorageKernels<bf16>;
extern template class StorageKernels<fp16>;

}  // namespace sb::kernels
