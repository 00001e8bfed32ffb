// SPDX-License-Identifier: Apache-2.0
// LayerNorm with Kokkos: rows in parallel, each row's passes vectorised; the weight and bias
// gradients in a second pass over column blocks. Written once over the storage type (float, and
// bf16 as it lies: cpu/sixteen_bit_elementwise.hpp), one expression for both, contracted alike;
// bf16 and fp16 rows in AVX-512 registers where the kernels' AVX-512 paths run (the same
// expressions over sixteen lanes, the statistics summed in another order), else bf16 by its
// rows and fp16 widened a block at a time into the thread's cache and run by the float rows
// (cpu/fp16_rows.hpp).
// Leaves out one-pass (Welford) statistics.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace sb::kernels::cpu {

namespace {

constexpr float kLayernormEps = 1e-5f;
// dweight/dbias columns per task: 32 floats, two cache lines per row.
constexpr i64 kLayernormColumnBlock = 32;
// fp16 rows of a column block widened per call: 64 rows x 32 values, 8 KiB of floats an operand
constexpr i64 kLayernormRowsWidened = 64;

template <class S>
[[gnu::always_inline]] inline void layernorm_forward_row_of(S* y, float* mean, float* rstd, const S* x, const S* weight,
                                                            const S* bias, i64 C) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (i64 c = 0; c < C; ++c) sum += widened(x[c]);
  const float m = sum / static_cast<float>(C);
  float sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
  for (i64 c = 0; c < C; ++c) sum_sq += (widened(x[c]) - m) * (widened(x[c]) - m);
  const float s = 1.0f / std::sqrt(sum_sq / static_cast<float>(C) + kLayernormEps);
  for (i64 c = 0; c < C; ++c) y[c] = stored<S>((widened(x[c]) - m) * s * widened(weight[c]) + widened(bias[c]));
  *mean = m;
  *rstd = s;
}

// dx += rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = dy weight.
template <class S>
[[gnu::always_inline]] inline void layernorm_backward_row_of(S* dx, const S* dy, const S* x, const S* weight, float m,
                                                             float s, i64 C) {
  float dnorm_sum = 0, dnorm_norm_sum = 0;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
  for (i64 c = 0; c < C; ++c) {
    const float dnorm = widened(dy[c]) * widened(weight[c]);
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * ((widened(x[c]) - m) * s);
  }
  const float dnorm_mean = dnorm_sum / static_cast<float>(C);
  const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
  for (i64 c = 0; c < C; ++c) {
    const float norm = (widened(x[c]) - m) * s;
    dx[c] = stored<S>(widened(dx[c]) + (widened(dy[c]) * widened(weight[c]) - dnorm_mean - norm * dnorm_norm_mean) * s);
  }
}

#define SB_LAYERNORM_ROWS(S)                                                                                  \
  SB_CPU_VECTOR_CLONES void layernorm_forward_row(S* y, float* mean, float* rstd, const S* x, const S* weight, \
                                                  const S* bias, i64 C) {                                    \
    layernorm_forward_row_of(y, mean, rstd, x, weight, bias, C);                                              \
  }                                                                                                           \
  SB_CPU_VECTOR_CLONES void layernorm_backward_row(S* dx, const S* dy, const S* x, const S* weight, float m,   \
                                                   float s, i64 C) {                                          \
    layernorm_backward_row_of(dx, dy, x, weight, m, s, C);                                                    \
  }
SB_LAYERNORM_ROWS(float)
SB_LAYERNORM_ROWS(bf16)
#undef SB_LAYERNORM_ROWS

#if defined(__x86_64__)
// 16-bit rows with AVX-512: the float rows' expressions over sixteen values at a time, read and
// written as S in registers; weight and bias as float. The sums run lane by lane, so mean, rstd
// and the backward's means may differ from the float rows' in their last bits.
template <class S>
SB_AVX512_TARGET void layernorm_forward_row_avx512(S* y, float* mean, float* rstd, const S* x, const float* weight,
                                                   const float* bias, i64 C) {
  __m512 sum = _mm512_setzero_ps();
  for (i64 c = 0; c < C; c += 16) sum = _mm512_add_ps(sum, widened16(x + c, first_lanes(C - c)));
  const float m = lanes_sum(sum) / static_cast<float>(C);
  __m512 sum_sq = _mm512_setzero_ps();
  for (i64 c = 0; c < C; c += 16) {
    const __mmask16 mask = first_lanes(C - c);
    const __m512 d = _mm512_maskz_sub_ps(mask, widened16(x + c, mask), _mm512_set1_ps(m));
    sum_sq = _mm512_fmadd_ps(d, d, sum_sq);
  }
  const float s = 1.0f / std::sqrt(lanes_sum(sum_sq) / static_cast<float>(C) + kLayernormEps);
  for (i64 c = 0; c < C; c += 16) {
    const __mmask16 mask = first_lanes(C - c);
    const Floats16 xv = widened16(x + c, mask);
    const Floats16 w = _mm512_maskz_loadu_ps(mask, weight + c), b = _mm512_maskz_loadu_ps(mask, bias + c);
    const Floats16 yv = (xv - m) * s * w + b;
    store_narrowed(y + c, yv, mask);
  }
  *mean = m;
  *rstd = s;
}

template <class S>
SB_AVX512_TARGET void layernorm_backward_row_avx512(S* dx, const S* dy, const S* x, const float* weight, float m,
                                                    float s, i64 C) {
  Floats16 dnorm_sums = _mm512_setzero_ps(), dnorm_norm_sums = _mm512_setzero_ps();
  for (i64 c = 0; c < C; c += 16) {
    const __mmask16 mask = first_lanes(C - c);
    const Floats16 dnorm = widened16(dy + c, mask) * Floats16(_mm512_maskz_loadu_ps(mask, weight + c));
    dnorm_sums += dnorm;
    dnorm_norm_sums += dnorm * ((Floats16(widened16(x + c, mask)) - m) * s);
  }
  const float dnorm_mean = lanes_sum(dnorm_sums) / static_cast<float>(C);
  const float dnorm_norm_mean = lanes_sum(dnorm_norm_sums) / static_cast<float>(C);
  for (i64 c = 0; c < C; c += 16) {
    const __mmask16 mask = first_lanes(C - c);
    const Floats16 norm = (Floats16(widened16(x + c, mask)) - m) * s;
    const Floats16 w = _mm512_maskz_loadu_ps(mask, weight + c);
    const Floats16 dxv =
        Floats16(widened16(dx + c, mask)) + (Floats16(widened16(dy + c, mask)) * w - dnorm_mean - norm * dnorm_norm_mean) * s;
    store_narrowed(dx + c, dxv, mask);
  }
}
#endif

void layernorm_forward_all(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, i64 N, i64 C) {
  parallel_for_each("sb::layernorm_forward", N, [=](i64 n) {
    layernorm_forward_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
  });
}

// A 16-bit parameter vector (weight, bias) as floats, widened once a call.
template <class S>
std::vector<float> widened_vector(const S* values, i64 n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  widen_values(out.data(), values, n);
  return out;
}

// Whether 16-bit rows run in AVX-512 registers here.
bool rows_in_registers() {
#if defined(__x86_64__)
  return avx512_kernels_run();
#else
  return false;
#endif
}

// 16-bit S: in registers with AVX-512, else bf16 by the bf16 rows and fp16 a block of rows at a
// time widened into the thread's cache (cpu/fp16_rows.hpp), the float row function run there on
// each row; weight and bias widened once where the rows read them as float.
template <class S>
void layernorm_forward_all(S* out, float* mean, float* rstd, const S* inp, const S* weight, const S* bias, i64 N,
                           i64 C) {
  const bool registers = rows_in_registers();
  if constexpr (std::is_same_v<S, bf16>) {
    if (!registers) {
      parallel_for_each("sb::layernorm_forward", N, [=](i64 n) {
        layernorm_forward_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
      });
      return;
    }
  }
  const std::vector<float> weight_values = widened_vector(weight, C), bias_values = widened_vector(bias, C);
  const float* w = weight_values.data();
  const float* b = bias_values.data();
  parallel_for_row_blocks("sb::layernorm_forward", N, C, [=](i64 n0, i64 rows) {
#if defined(__x86_64__)
    if (registers) {
      for (i64 n = n0; n < n0 + rows; ++n)
        layernorm_forward_row_avx512(out + n * C, mean + n, rstd + n, inp + n * C, w, b, C);
      return;
    }
#endif
    if constexpr (std::is_same_v<S, fp16>) {
      WidenedRows wide(rows * C);
      const float* x = wide.in(inp + n0 * C);
      float* y = wide.out(out + n0 * C);
      for (i64 r = 0; r < rows; ++r)
        layernorm_forward_row(y + r * C, mean + n0 + r, rstd + n0 + r, x + r * C, w, b, C);
      wide.narrow();
    }
  });
}

// The dinp rows: float and (without AVX-512) bf16 by their own rows; 16-bit in registers with
// AVX-512; fp16 otherwise a block of rows widened at a time.
template <class S>
void layernorm_backward_dinp(S* dinp, const S* dout, const S* inp, const S* weight, const float* mean,
                             const float* rstd, i64 N, i64 C) {
  const bool registers = !std::is_same_v<S, float> && rows_in_registers();
  if constexpr (!std::is_same_v<S, fp16>) {
    if (!registers) {
      parallel_for_each("sb::layernorm_backward::dinp", N, [=](i64 n) {
        layernorm_backward_row(dinp + n * C, dout + n * C, inp + n * C, weight, mean[n], rstd[n], C);
      });
      return;
    }
  }
  if constexpr (!std::is_same_v<S, float>) {
    const std::vector<float> weight_values = widened_vector(weight, C);
    const float* w = weight_values.data();
    parallel_for_row_blocks("sb::layernorm_backward::dinp", N, C, [=](i64 n0, i64 rows) {
#if defined(__x86_64__)
      if (registers) {
        for (i64 n = n0; n < n0 + rows; ++n)
          layernorm_backward_row_avx512(dinp + n * C, dout + n * C, inp + n * C, w, mean[n], rstd[n], C);
        return;
      }
#endif
      if constexpr (std::is_same_v<S, fp16>) {
        WidenedRows wide(rows * C);
        const float* dy = wide.in(dout + n0 * C);
        const float* x = wide.in(inp + n0 * C);
        float* dx = wide.inout(dinp + n0 * C);
        for (i64 r = 0; r < rows; ++r)
          layernorm_backward_row(dx + r * C, dy + r * C, x + r * C, w, mean[n0 + r], rstd[n0 + r], C);
        wide.narrow();
      }
    });
  }
}

template <class S>
void layernorm_backward_all(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                            const float* mean, const float* rstd, i64 N, i64 C) {
  layernorm_backward_dinp(dinp, dout, inp, weight, mean, rstd, N, C);
  // dweight and dbias sum over all rows: a task owns a block of columns and adds rows in
  // order, so there are no shared writes and the result does not depend on the thread count.
  const i64 blocks = (C + kLayernormColumnBlock - 1) / kLayernormColumnBlock;
  parallel_for_each("sb::layernorm_backward::dweight_dbias", blocks, [=](i64 block) {
    const i64 c0 = block * kLayernormColumnBlock;
    const i64 width = std::min(kLayernormColumnBlock, C - c0);
    float dweight_sum[kLayernormColumnBlock] = {}, dbias_sum[kLayernormColumnBlock] = {};
    // fp16: the block's columns of kLayernormRowsWidened rows widened in one call each
    constexpr i64 kWidened = (std::is_same_v<S, fp16> ? kLayernormRowsWidened : 1) * kLayernormColumnBlock;
    float x_rows[kWidened], dy_rows[kWidened];
    for (i64 n = 0; n < N; ++n) {
      const float m = mean[n], s = rstd[n];
      if constexpr (std::is_same_v<S, fp16>) {
        const i64 in_block = n % kLayernormRowsWidened;
        if (in_block == 0) {
          const i64 rows = std::min(kLayernormRowsWidened, N - n);
          widen_rows(x_rows, inp + n * C + c0, C, rows, width);
          widen_rows(dy_rows, dout + n * C + c0, C, rows, width);
        }
        const float* x = x_rows + in_block * width;
        const float* dy = dy_rows + in_block * width;
        for (i64 j = 0; j < width; ++j) {
          dweight_sum[j] += dy[j] * ((x[j] - m) * s);
          dbias_sum[j] += dy[j];
        }
      } else {
        const S* x = inp + n * C + c0;
        const S* dy = dout + n * C + c0;
        for (i64 j = 0; j < width; ++j) {
          dweight_sum[j] += widened(dy[j]) * ((widened(x[j]) - m) * s);
          dbias_sum[j] += widened(dy[j]);
        }
      }
    }
    for (i64 j = 0; j < width; ++j) {
      dweight[c0 + j] += dweight_sum[j];
      dbias[c0 + j] += dbias_sum[j];
    }
  });
}

}  // namespace

SB_DECLARE_LAYERNORM_FORWARD(float, float) { layernorm_forward_all(out, mean, rstd, inp, weight, bias, N, C); }
SB_DECLARE_LAYERNORM_FORWARD(bf16, float) { layernorm_forward_all(out, mean, rstd, inp, weight, bias, N, C); }
SB_DECLARE_LAYERNORM_FORWARD(fp16, float) { layernorm_forward_all(out, mean, rstd, inp, weight, bias, N, C); }
SB_DECLARE_LAYERNORM_BACKWARD(float, float) {
  layernorm_backward_all(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}
SB_DECLARE_LAYERNORM_BACKWARD(bf16, float) {
  layernorm_backward_all(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}
SB_DECLARE_LAYERNORM_BACKWARD(fp16, float) {
  layernorm_backward_all(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

}  // namespace sb::kernels::cpu
