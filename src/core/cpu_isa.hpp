// SPDX-License-Identifier: Apache-2.0
// The instruction set oneDNN dispatches its CPU primitives to in this process (the CPU's
// features, capped by ONEDNN_MAX_CPU_ISA), named as runs record it, and whether bf16 GEMMs
// run natively on it. Leaves out oneDNN's finer ISA hints (prefer_ymm) and GPU engines.
#pragma once

#include <string>

namespace sb {

// "amx_bf16" | "avx512_bf16" | "avx512" | "avx2_vnni" | "avx2" | "generic". oneDNN fixes its ISA at the
// first query or primitive, so ONEDNN_MAX_CPU_ISA must be set before the process makes either.
std::string onednn_cpu_isa();

// True where oneDNN has bf16 dot-product instructions (AMX-BF16 or AVX512-BF16): the cpu
// back-end's bf16 GEMMs then take bf16 operands directly. Below that it would emulate them,
// and widening to fp32 for OpenBLAS is the faster path.
bool onednn_has_native_bf16();

// True where oneDNN runs AMX-BF16 tiles (not capped below avx512_core_amx by ONEDNN_MAX_CPU_ISA).
bool onednn_has_amx_bf16();

// True where the cpu back-end's fp16 linear layers split each operand into bf16 pairs and run
// bf16 oneDNN GEMMs three times as deep (kernels/cpu/split_fp16.hpp): AMX-BF16, whose bf16 rate
// is several times fp32's, so three bf16 products still beat one fp32 FMA; and AVX512-BF16 for
// the split itself. Below AMX the packed fp32 GEMM is faster.
bool onednn_splits_fp16_matmul();

// True where oneDNN runs at AVX-512 or above: the cpu back-end's fp32 convolutions then run as
// oneDNN primitives (kernels/cpu/onednn_conv2d.hpp); below that the own kernels (conv2d.cpp) are
// the faster ones.
bool onednn_runs_fp32_conv2d();

// True where the cpu back-end runs its own AVX-512 kernels: the 16-bit linear layers' GEMM
// (kernels/cpu/packed_matmul.hpp) and the blocked-layout tiles of the oneDNN convolutions
// (kernels/cpu/blocked_channels_add.hpp). The CPU has AVX-512 (F, BW, VL, DQ) and F16C, and
// oneDNN's ISA is AVX-512 or above, so that ONEDNN_MAX_CPU_ISA=AVX2 forces their fallbacks too.
bool cpu_runs_avx512_kernels();

// The linear layers' GEMMs StorageKernels runs on the cpu back-end at a 16-bit precision ("bf16"
// or "fp16"), as runs record them (context.matmul_bf16, context.matmul_fp16): "onednn" (bf16
// oneDNN matmul primitives), "split-bf16+onednn" (fp16 only: each fp16 operand split into bf16
// pairs for oneDNN's AMX bf16 matmul, three products deep), "packed" (the own AVX-512 GEMM,
// widening while it packs) or "widened+openblas" (operands widened whole to fp32 for OpenBLAS).
std::string matmul_implementation(const std::string& precision);

// The convolutions StorageKernels runs on the cpu back-end at a storage precision, as runs
// record them (context.conv2d_fp32, context.conv2d_bf16): "onednn" (oneDNN primitives, bf16 ones
// for "bf16"), "own" (conv2d.cpp's shifted-plane / im2col kernels), or for bf16 and fp16
// "widened+onednn" / "widened+own" (operands widened to fp32 for those).
std::string conv2d_implementation(const std::string& precision);

// True where oneDNN runs int8 dot-product instructions that sum exactly (AVX512-VNNI, AVX-VNNI,
// AMX-INT8): the cpu back-end's int8 GEMM sums on oneDNN then (kernels/cpu/onednn_int8_matmul.hpp);
// below that oneDNN's int8 kernels saturate 16-bit intermediates and the own kernel sums.
bool onednn_has_int8_dot_products();
// The int8 inference GEMM and convolution as runs record it (context.int8_matmul): "onednn"
// or "own".
std::string int8_matmul_implementation();
// Whether this CPU runs the F16C conversions (and AVX, which their 256-bit forms need): the cpu
// back-end's float <-> fp16 conversions take them then (kernels/cpu/fp16_conversion_paths.hpp).
bool cpu_has_f16c();
// Whether this CPU runs AVX-512 F, BW, VL and DQ with F16C: the fp16 conversions' 16-wide forms.
bool cpu_has_avx512();
// Whether this CPU runs AVX512-BF16's conversions (vcvtneps2bf16): the fp16 split's rounding.
bool cpu_has_avx512_bf16();
// Those conversions as runs record them (context.fp16_convert): "avx512", "f16c" or "portable".
std::string fp16_conversion_implementation();
// "2.6.3 (a1b2c3d)": the oneDNN library this process runs.
std::string onednn_version();

}  // namespace sb
