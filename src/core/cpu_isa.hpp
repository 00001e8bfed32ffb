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

// "2.6.3 (a1b2c3d)": the oneDNN library this process runs.
std::string onednn_version();

}  // namespace sb
