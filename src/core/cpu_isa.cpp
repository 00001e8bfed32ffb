// SPDX-License-Identifier: Apache-2.0
// oneDNN's effective CPU ISA as a run records it, and its version.
#include "core/cpu_isa.hpp"

#include <dnnl.h>
#include <fmt/format.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace sb {

namespace {

bool includes(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t level) {
  return (static_cast<unsigned>(isa) & static_cast<unsigned>(level)) == static_cast<unsigned>(level);
}

}  // namespace

std::string onednn_cpu_isa() {
  // The enum values are bit masks: each level holds the bits of the levels below it.
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (includes(isa, dnnl_cpu_isa_avx512_core_amx)) return "amx_bf16";
  if (includes(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_bf16";
  if (includes(isa, dnnl_cpu_isa_avx512_core)) return "avx512";
  if (includes(isa, dnnl_cpu_isa_avx2_vnni)) return "avx2_vnni";
  if (includes(isa, dnnl_cpu_isa_avx2)) return "avx2";
  return "generic";
}

bool onednn_has_native_bf16() {
  return includes(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core_bf16);
}

bool onednn_has_amx_bf16() { return includes(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core_amx); }

bool onednn_runs_fp32_conv2d() { return includes(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core); }

std::string conv2d_implementation(const std::string& precision) {
  const std::string fp32 = onednn_runs_fp32_conv2d() ? "onednn" : "own";
  if (precision == "fp32") return fp32;
  if (precision == "bf16" && onednn_has_native_bf16()) return "onednn";
  return "widened+" + fp32;
}

bool cpu_runs_avx512_kernels() {
  return cpu_has_avx512() && includes(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core);
}

bool onednn_splits_fp16_matmul() { return onednn_has_amx_bf16() && cpu_has_avx512() && cpu_has_avx512_bf16(); }

std::string matmul_implementation(const std::string& precision) {
  if (precision == "bf16" && onednn_has_native_bf16()) return "onednn";
  if (precision == "fp16" && onednn_splits_fp16_matmul()) return "split-bf16+onednn";
  return cpu_runs_avx512_kernels() ? "packed" : "widened+openblas";
}

bool onednn_has_int8_dot_products() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  return includes(isa, dnnl_cpu_isa_avx512_core_vnni) || includes(isa, dnnl_cpu_isa_avx2_vnni);
}

std::string int8_matmul_implementation() { return onednn_has_int8_dot_products() ? "onednn" : "own"; }

bool cpu_has_f16c() {
#if defined(__x86_64__)
  // AVX2 as the compiler's runtime reports it (the OS saves the ymm state too); F16C from CPUID
  // leaf 1, ECX bit 29 (clang's __builtin_cpu_supports has no "f16c")
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && cpu_has_f16c();
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

std::string fp16_conversion_implementation() {
  if (cpu_has_avx512()) return "avx512";
  return cpu_has_f16c() ? "f16c" : "portable";
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} ({})", v->major, v->minor, v->patch, v->hash);
}

}  // namespace sb
