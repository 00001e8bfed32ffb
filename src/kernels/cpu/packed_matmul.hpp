// SPDX-License-Identifier: Apache-2.0
// The GPT's linear layer over bf16 or fp16 operands on an own AVX-512 GEMM that widens the
// operands while it packs them (BLIS's loops: a packed weight block shared by the threads, a
// packed row block per task, a 6x64 register tile), so no operand is ever widened whole into
// memory and read back. What StorageKernels<fp16> runs on the cpu back-end where
// cpu_runs_avx512_kernels() (core/cpu_isa.hpp), and StorageKernels<bf16> there where oneDNN has
// no bf16 instructions; elsewhere the operands are widened for OpenBLAS. Sums are fp32, each
// 16-bit result rounded once. Leaves out float operands (OpenBLAS) and the empty extents.
#pragma once

#include "kernels/storage_kernels.hpp"

namespace sb::kernels::cpu {

// S = bf16 or fp16. Only where sb::cpu_runs_avx512_kernels(); `scratch` holds the packed
// weights until its owner releases it (StorageKernels releases after each call).
// inp (BT,C), weight (OC,C), bias (OC) or nullptr -> out (BT,OC) (OVERWRITTEN)
template <class S>
void packed_matmul_forward(WideningScratch& scratch, S* out, const S* inp, const S* weight, const S* bias, i64 BT,
                           i64 C, i64 OC);
// dout (BT,OC) -> dinp (BT,C) += dout . weight (summed in fp32 onto the widened dinp, rounded
// once), dweight (OC,C) += dout^T . inp, dbias (OC) += column sums of dout (nullptr: skipped;
// each column added row by row in order, as add_column_sums does)
template <class S>
void packed_matmul_backward(WideningScratch& scratch, S* dinp, float* dweight, float* dbias, const S* dout,
                            const S* inp, const S* weight, i64 BT, i64 C, i64 OC);

}  // namespace sb::kernels::cpu
