// SPDX-License-Identifier: Apache-2.0
// cuBLAS and cuBLASLt loaded when the cuda back-end first calls them, not when a process
// starts. Linked, the two libraries' initialisers took 0.33 s of CPU at every start of every
// process (each MPI rank, each test, each `scalebench --version`), on CPU runs too, and a
// CPU-only node could not start the binary without them. These definitions stand in for the
// functions the cuda back-end calls (the names cublas_v2.h maps them to): the first call of
// each opens the library (the soname this build was compiled against, then the toolkit's
// library folder) and finds the function there; a node without cuBLAS gets one sentence naming
// the library. Leaves out every other cuBLAS function: one not listed here fails to link.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/check.hpp"

namespace {

enum class Library { blas, lt };

// The library's handle, opened once: by soname (LD_LIBRARY_PATH, the loader's cache), then
// from the CUDA toolkit this build used.
void* opened(Library library) {
  static std::once_flag once[2];
  static void* handles[2] = {nullptr, nullptr};
  const int i = library == Library::blas ? 0 : 1;
  std::call_once(once[i], [&] {
    const std::string soname = library == Library::blas ? SB_CUBLAS_SONAME : SB_CUBLASLT_SONAME;
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) handle = dlopen((std::string(SB_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_GLOBAL);
    SB_USER_CHECK(handle != nullptr, "device cuda needs {} (cuBLAS, from the CUDA toolkit): {}; put its folder on "
                  "LD_LIBRARY_PATH, or use device: cpu", soname, dlerror());
    handles[i] = handle;
  });
  return handles[i];
}

template <class Fn>
Fn symbol(Library library, const char* name) {
  void* address = dlsym(opened(library), name);
  SB_USER_CHECK(address != nullptr, "{} has no function {}: {} (this build needs CUDA {})",
                library == Library::blas ? SB_CUBLAS_SONAME : SB_CUBLASLT_SONAME, name, dlerror(),
                SB_CUDA_VERSION_MAJOR);
  return reinterpret_cast<Fn>(address);
}

}  // namespace

// `fn`: the library's function of the stand-in's own name and type, found at its first call.
#define SB_FOUND_AT_FIRST_CALL(library, name) static const auto fn = symbol<decltype(&name)>(library, #name)

extern "C" cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasCreate_v2);
  return fn(handle);
}

extern "C" cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasDestroy_v2);
  return fn(handle);
}

extern "C" cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasSetStream_v2);
  return fn(handle, streamId);
}

extern "C" cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasSetWorkspace_v2);
  return fn(handle, workspace, workspaceSizeInBytes);
}

extern "C" cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasSetMathMode);
  return fn(handle, mode);
}

extern "C" const char* cublasGetStatusString(cublasStatus_t status) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasGetStatusString);
  return fn(status);
}

extern "C" const char* cublasGetStatusName(cublasStatus_t status) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasGetStatusName);
  return fn(status);
}

extern "C" cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const float* alpha, const float* A, int64_t lda, const float* B, int64_t ldb, const float* beta, float* C, int64_t ldc) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasSgemm_v2_64);
  return fn(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

extern "C" cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const float* alpha, const float* A, int64_t lda, long long int strideA, const float* B, int64_t ldb, long long int strideB, const float* beta, float* C, int64_t ldc, long long int strideC, int64_t batchCount) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasSgemmStridedBatched_64);
  return fn(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

extern "C" cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const void* beta, void* C, cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasGemmEx_64);
  return fn(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

extern "C" cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda, long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC, int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  SB_FOUND_AT_FIRST_CALL(Library::blas, cublasGemmStridedBatchedEx_64);
  return fn(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

extern "C" cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtCreate);
  return fn(lightHandle);
}

extern "C" cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtDestroy);
  return fn(lightHandle);
}

extern "C" size_t cublasLtGetVersion(void) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtGetVersion);
  return fn();
}

extern "C" cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatrixLayoutCreate);
  return fn(matLayout, type, rows, cols, ld);
}

extern "C" cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatrixLayoutDestroy);
  return fn(matLayout);
}

extern "C" cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulDescCreate);
  return fn(matmulDesc, computeType, scaleType);
}

extern "C" cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulDescDestroy);
  return fn(matmulDesc);
}

extern "C" cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulDescSetAttribute);
  return fn(matmulDesc, attr, buf, sizeInBytes);
}

extern "C" cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulPreferenceCreate);
  return fn(pref);
}

extern "C" cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulPreferenceDestroy);
  return fn(pref);
}

extern "C" cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulPreferenceSetAttribute);
  return fn(pref, attr, buf, sizeInBytes);
}

extern "C" cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulAlgoGetHeuristic);
  return fn(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
}

extern "C" cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmulAlgoConfigGetAttribute);
  return fn(algo, attr, buf, sizeInBytes, sizeWritten);
}

extern "C" cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  SB_FOUND_AT_FIRST_CALL(Library::lt, cublasLtMatmul);
  return fn(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
}
