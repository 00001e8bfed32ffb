// SPDX-License-Identifier: Apache-2.0
// The state CUDA kernels run against: device, stream, cuBLAS and cuBLASLt handles, the
// cuBLASLt workspace, a reusable scratch buffer and cached GEMM plans. Leaves out NCCL
// communicators and multi-device placement (one context per device and thread).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

namespace sb::kernels::cuda {

struct GemmPlanCache;  // gemm.hpp

// Devices this process sees; 0 where there is no driver or no GPU (cudaGetDeviceCount then
// fails with error 35 or 100, which is no error for a CPU-only machine).
int visible_device_count();

// "NVIDIA H200, sm_90, 132 SMs, 141 GB, driver 13.0, runtime 13.0, cuBLAS 130100".
std::string describe_device(int device);

class CudaContext {
 public:
  explicit CudaContext(int device = 0);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  // A blocking stream: plain cudaMemcpy on the legacy default stream waits for its work.
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cublasLtHandle_t cublaslt() const { return cublaslt_; }
  void* cublaslt_workspace() const { return workspace_; }
  std::size_t cublaslt_workspace_bytes() const { return workspace_bytes_; }
  GemmPlanCache& gemm_plans() { return *gemm_plans_; }
  // Whether gemm() times the heuristic's candidates on first use of a signature (gemm.hpp).
  // On unless the environment holds SB_GEMM_AUTOTUNE=0 when the context is created.
  bool gemm_autotune() const { return gemm_autotune_; }
  void set_gemm_autotune(bool on) { gemm_autotune_ = on; }

  // Device scratch of at least `bytes`, valid until the next call of scratch(): for the
  // temporaries of one kernel call (attention's score gradients, norm partial sums). Work
  // is stream-ordered, so reuse by the next kernel on this stream is safe.
  void* scratch(std::size_t bytes);

  void synchronize() const;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  std::unique_ptr<GemmPlanCache> gemm_plans_;
  bool gemm_autotune_ = true;
};

// The context of the kernel table's functions, whose signatures carry none: one per host
// thread, on the thread's current device when first used (0 unless cudaSetDevice chose). Code that holds its own context passes it to
// gemm() and friends instead.
CudaContext& default_context();

}  // namespace sb::kernels::cuda
