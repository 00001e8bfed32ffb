// SPDX-License-Identifier: Apache-2.0
// CudaContext: creation and teardown of the stream, library handles and workspaces, and the
// per-thread default context. Leaves out device selection policy (always the given device).
#include "kernels/cuda/cuda_context.hpp"

#include <cstdlib>
#include <string_view>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/gemm.hpp"

namespace sb::kernels::cuda {

namespace {
// NVIDIA's advice for Hopper: 32 MiB lets cuBLASLt pick its fastest kernels.
constexpr std::size_t kCublasLtWorkspaceBytes = std::size_t{32} << 20;
}  // namespace

int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error for later queries
    return 0;
  }
  return count;
}

std::string describe_device(int device) {
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  SB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  SB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  return fmt::format("{}, sm_{}{}, {} SMs, {:.0f} GB, {} MB L2, driver {}.{}, runtime {}.{}, cuBLAS {}",
                     prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                     static_cast<double>(prop.totalGlobalMem) / 1e9, prop.l2CacheSize >> 20,
                     driver / 1000, (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10,
                     cublasLtGetVersion());
}

CudaContext::CudaContext(int device) : device_(device) {
  SB_CHECK(device >= 0 && device < visible_device_count(),
           "CudaContext: device {} is not visible ({} devices)", device, visible_device_count());
  SB_CUDA_CHECK(cudaSetDevice(device));
  SB_CUDA_CHECK(cudaStreamCreate(&stream_));
  SB_CUBLAS_CHECK(cublasCreate(&cublas_));
  SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  // Plain fp32 for the kernel table (the default math mode allows no TF32 rounding): TF32 is a
  // precision the caller chooses through gemm().
  SB_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  SB_CUBLAS_CHECK(cublasLtCreate(&cublaslt_));
  workspace_bytes_ = kCublasLtWorkspaceBytes;
  SB_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  SB_CUBLAS_CHECK(cublasSetWorkspace(cublas_, workspace_, workspace_bytes_));
  gemm_plans_ = std::make_unique<GemmPlanCache>();
  // Inline, not core/environment: this library links before sb_core or sb_kernels_portable.
  const char* autotune = std::getenv("SB_GEMM_AUTOTUNE");
  const std::string_view value = autotune == nullptr ? "" : autotune;
  SB_USER_CHECK(value.empty() || value == "0" || value == "1",
                "environment variable SB_GEMM_AUTOTUNE is '{}' but must be 0 or 1", value.substr(0, 40));
  gemm_autotune_ = value != "0";
}

CudaContext::~CudaContext() {
  // Teardown errors are ignored: destructors must not throw, and the process may be exiting.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  gemm_plans_.reset();
  if (cublas_) cublasDestroy(cublas_);
  if (cublaslt_) cublasLtDestroy(cublaslt_);
  if (workspace_) cudaFree(workspace_);
  if (scratch_) cudaFree(scratch_);
  if (stream_) cudaStreamDestroy(stream_);
}

void* CudaContext::scratch(std::size_t bytes) {
  if (bytes > scratch_bytes_) {
    if (scratch_) SB_CUDA_CHECK(cudaFree(scratch_));  // cudaFree waits for work that uses it
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    SB_CUDA_CHECK(cudaMalloc(&scratch_, bytes));
    scratch_bytes_ = bytes;
  }
  return scratch_;
}

void CudaContext::synchronize() const { SB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaContext& default_context() {
  // The device this thread made current (a trainer rank selects its node-local GPU before any
  // kernel runs); 0 when nobody chose, as cudaGetDevice reports then.
  thread_local CudaContext context([] {
    int device = 0;
    SB_CUDA_CHECK(cudaGetDevice(&device));
    return device;
  }());
  return context;
}

}  // namespace sb::kernels::cuda
