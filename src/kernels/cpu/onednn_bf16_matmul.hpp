// SPDX-License-Identifier: Apache-2.0
// The GPT's linear layer with bf16 operands on oneDNN matmul primitives (AMX-BF16 or
// AVX512-BF16 tiles, fp32 accumulation): what StorageKernels<bf16> calls on the cpu back-end
// instead of widening to fp32 for OpenBLAS, where core/cpu_isa.hpp says the CPU runs bf16
// natively. The fp16 linear layer too where oneDNN runs AMX (core/cpu_isa.hpp's
// onednn_splits_fp16_matmul): each fp16 operand split exactly into bf16 pairs (split_fp16.hpp)
// and multiplied in one bf16 GEMM three times as deep, fp32 sums. Leaves out the empty extents
// (the widening path handles them).
#pragma once

#include <memory>
#include <string>

#include "kernels/storage_kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

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

  // The same over fp16 operands as hi.hi + hi.lo + lo.hi of their bf16 parts (each product within
  // 2^-16 of itself), summed in fp32 and rounded to fp16 once; the split operands and the fp32
  // results live in `scratch`.
  void forward(fp16* out, const fp16* inp, const fp16* weight, const fp16* bias, i64 BT, i64 C, i64 OC);
  void backward(fp16* dinp, float* dweight, float* dbias, const fp16* dout, const fp16* inp, const fp16* weight,
                i64 BT, i64 C, i64 OC);

  // The oneDNN implementation of the last GEMM run ("brg:avx512_core_amx", ...), for logs and tests.
  const std::string& last_implementation() const;

 private:
  struct Primitives;
  std::unique_ptr<Primitives> primitives_;
  WideningScratch* scratch_;
};

}  // namespace sb::kernels::cpu
