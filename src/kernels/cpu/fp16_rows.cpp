// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/fp16_rows.hpp"

#include "core/check.hpp"
#include "core/cpu_isa.hpp"
#include "kernels/cpu/fp16_conversion_paths.hpp"
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

void widen_fp16(float* out, const fp16* inp, i64 n) {
  static const WidenFp16 convert = fp16_widening();
  convert(out, inp, n);
}

void narrow_to_fp16(fp16* out, const float* inp, i64 n) {
  static const NarrowToFp16 convert = fp16_narrowing();
  convert(out, inp, n);
}

SB_CPU_VECTOR_CLONES void widen_values(float* out, const bf16* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_float(inp[i]);
}

SB_CPU_VECTOR_CLONES void narrow_values(bf16* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = to_bf16(inp[i]);
}

void widen_rows(float* out, const fp16* inp, i64 ld, i64 rows, i64 n) {
  static const bool avx512 = cpu_has_avx512();
  if (avx512) return fp16_rows_to_f32_avx512(out, inp, ld, rows, n);
  for (i64 r = 0; r < rows; ++r) widen_fp16(out + r * n, inp + r * ld, n);
}
void widen_rows(float* out, const bf16* inp, i64 ld, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) widen_values(out + r * n, inp + r * ld, n);
}
void narrow_rows(fp16* out, i64 ld, const float* inp, i64 rows, i64 n) {
  static const bool avx512 = cpu_has_avx512();
  if (avx512) return f32_rows_to_fp16_avx512(out, ld, inp, rows, n);
  for (i64 r = 0; r < rows; ++r) narrow_to_fp16(out + r * ld, inp + r * n, n);
}
void narrow_rows(bf16* out, i64 ld, const float* inp, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; ++r) narrow_values(out + r * ld, inp + r * n, n);
}

namespace {

// Each row's buffer starts on a 64-byte line.
i64 padded(i64 n) { return (n + 15) / 16 * 16; }

}  // namespace

WidenedRows::WidenedRows(i64 n) : n_(n), scratch_(thread_scratch(padded(n) * kBuffers)) {}

float* WidenedRows::next() {
  SB_CHECK(used_ < kBuffers, "WidenedRows: more than {} rows of {} values", kBuffers, n_);
  return scratch_ + padded(n_) * used_++;
}

const float* WidenedRows::in(const fp16* row) {
  if (!row) return nullptr;
  float* values = next();
  widen_fp16(values, row, n_);
  return values;
}

float* WidenedRows::out(fp16* row) {
  float* values = next();
  pending_[static_cast<std::size_t>(pending_count_++)] = {row, values};
  return values;
}

float* WidenedRows::inout(fp16* row) {
  float* values = out(row);
  widen_fp16(values, row, n_);
  return values;
}

void WidenedRows::narrow() {
  for (int i = 0; i < pending_count_; ++i) narrow_to_fp16(pending_[i].row, pending_[i].values, n_);
  pending_count_ = 0;
}

}  // namespace sb::kernels::cpu
