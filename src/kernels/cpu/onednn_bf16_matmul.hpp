// SPDX-License-Identifier: Apache-2.0
// The GPT's linear layer with bf16 operands on oneDNN matmul primitives (AMX-BF16 or
// AVX512-BF16 tiles, fp32 accumulation): what StorageKernels<bf16> calls on the cpu back-end
// instead of widening to fp32 for OpenBLAS, where core/cpu_isa.hpp says the CPU runs bf16
// natively. Leaves out the empty extents (the widening path handles them) and fp16.
#pragma once

#include <memory>
#include <string>

#include "kernels/storage_kernels.hpp"
#include "precision/bf16.hpp"

namespace sb::kernels::cpu {

class OnednnBf16Matmul {
 public:
  // oneDNN's scratchpads come from `scratch`, released after each call.
  explicit OnednnBf16Matmul(WideningScratch& scratch);
  ~OnednnBf16Matmul();
  OnednnBf16Matmul(const OnednnBf16Matmul&) = delete;
  OnednnBf16Matmul& operator=(const OnednnBf16Matmul&) = delete;

  // inp (BT,C), weight (OC,C), bias (OC) or nullptr -> out (BT,OC), rounded to bf16 once
  void forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, i64 BT, i64 C, i64 OC);
  // dout (BT,OC) -> dinp (BT,C) += (summed in fp32, rounded once), dweight (OC,C) += and
  // dbias (OC) += in fp32 (dbias nullptr: skipped)
  void backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp, const bf16* weight,
                i64 BT, i64 C, i64 OC);

  // The oneDNN implementation of the last GEMM run ("brg:avx512_core_amx", ...), for logs and tests.
  const std::string& last_implementation() const;

 private:
  struct Primitives;
  std::unique_ptr<Primitives> primitives_;
  WideningScratch* scratch_;
};

}  // namespace sb::kernels::cpu
