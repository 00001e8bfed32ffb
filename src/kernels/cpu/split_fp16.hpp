// SPDX-License-Identifier: Apache-2.0
// fp16 values split exactly into two bf16 values, x = hi + lo: hi is x rounded to bf16 (nearest
// even), lo the remainder rounded to bf16, which holds it exactly (fp16's 11 significant bits
// are hi's 8 and at most 4 more; fp16's exponents are all normal in bf16). So a product of two
// fp16 values is hi.hi + hi.lo + lo.hi within 2^-16 of itself (lo.lo left out), and a bf16 GEMM
// three times as deep over [hi hi lo] . [hi lo hi] gives an fp16 GEMM with fp32 sums at AMX's
// bf16 rate (onednn_bf16_matmul.hpp). inf and NaN split into a NaN lo, so a non-finite operand
// gives a non-finite result, as dynamic loss scaling needs, though inf may come out as NaN. For
// the cpu back-end, where the CPU has AVX512-BF16 (split_fp16_rows refuses to run elsewhere).
#pragma once

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

// The two parts of one value, the definition the vector code matches bit for bit.
struct Bf16Parts {
  bf16 hi, lo;
};
Bf16Parts split_to_bf16(fp16 x);

// Which part each of the three copies holds: the left operand's rows are [hi hi lo], the
// right's [hi lo hi], so the products pair hi.hi, hi.lo and lo.hi.
enum class SplitOrder { hi_hi_lo, hi_lo_hi };

// x (rows, cols) row-major -> three copies: copy p of element (r, j) at
// out[p * copy_offset + r * out_row_stride + j]. Side by side in each row: out_row_stride =
// 3 cols, copy_offset = cols; stacked: out_row_stride = cols, copy_offset = rows * cols.
void split_fp16_rows(bf16* out, const fp16* x, i64 rows, i64 cols, i64 out_row_stride, i64 copy_offset,
                     SplitOrder order);

}  // namespace sb::kernels::cpu
