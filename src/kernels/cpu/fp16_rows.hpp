// SPDX-License-Identifier: Apache-2.0
// The cpu elementwise kernels over fp16 as it lies: a row or chunk's fp16 operands widened into
// the calling thread's scratch, the float row function run on them there, and its results
// narrowed back (F16C where the CPU has it, the portable code of precision/fp16.hpp otherwise:
// the same bits). The float function sees the values a widened tensor would hold and rounds
// nothing itself, so the results are those of widening the whole tensor, running the float
// kernel and narrowing, in a pass over memory that reads and writes 2 bytes a value. Used by
// the kernels of cpu/sixteen_bit_elementwise.hpp (where bf16, whose widening is a shift, widens
// in registers instead); the row conversions below also by attention's heads and the packed GEMM.
#pragma once

#include <array>

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

void widen_fp16(float* out, const fp16* inp, i64 n);
void narrow_to_fp16(fp16* out, const float* inp, i64 n);

// A row of either 16-bit type to float and back, each value exactly as the kernels round it:
// fp16 by the two above, bf16 by precision/bf16.hpp's functions in a vectorised loop.
inline void widen_values(float* out, const fp16* inp, i64 n) { widen_fp16(out, inp, n); }
void widen_values(float* out, const bf16* inp, i64 n);
inline void narrow_values(fp16* out, const float* inp, i64 n) { narrow_to_fp16(out, inp, n); }
void narrow_values(bf16* out, const float* inp, i64 n);
// `rows` rows of n values `ld` apart in the 16-bit array <-> back to back in the float one (the
// same values as widen_values / narrow_values row by row; fp16 with AVX-512 in one call, where a
// call a row cost attention's narrow heads more than the conversion).
void widen_rows(float* out, const fp16* inp, i64 ld, i64 rows, i64 n);
void widen_rows(float* out, const bf16* inp, i64 ld, i64 rows, i64 n);
void narrow_rows(fp16* out, i64 ld, const float* inp, i64 rows, i64 n);
void narrow_rows(bf16* out, i64 ld, const float* inp, i64 rows, i64 n);

// Up to kBuffers rows of n values in the calling thread's scratch, valid until the next
// WidenedRows on the thread. Not reentrant: the float row function must not make one.
class WidenedRows {
 public:
  static constexpr int kBuffers = 4;
  explicit WidenedRows(i64 n);
  WidenedRows(const WidenedRows&) = delete;
  WidenedRows& operator=(const WidenedRows&) = delete;

  const float* in(const fp16* row);  // nullptr stays nullptr
  float* out(fp16* row);             // narrowed into row by narrow()
  float* inout(fp16* row);           // widened, and narrowed back by narrow()
  void narrow();

 private:
  float* next();
  struct Pending {
    fp16* row;
    const float* values;
  };
  i64 n_;
  float* scratch_;
  int used_ = 0;
  std::array<Pending, kBuffers> pending_{};
  int pending_count_ = 0;
};

}  // namespace sb::kernels::cpu
