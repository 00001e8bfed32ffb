// SPDX-License-Identifier: Apache-2.0
// BatchNorm2d split at its per-channel reductions, Kokkos over channels for the sums (rows
// vectorised, added in double in row order: deterministic) and over (image, channel) rows
// for the elementwise passes. The ReLU mask and the residual add are fused into the passes.
// Each pass is written once over the storage type S: float, and bf16 read and written as it
// lies (cpu/sixteen_bit_elementwise.hpp), each value widened in registers and each result rounded once,
// so that a bf16 network's BatchNorm computes what widening its tensors to float and narrowing
// the result did, without the passes over memory that costs.
// fp16 rows are widened in AVX-512 registers where the CPU has them (each pass then one sweep
// over the row, as float's), else into the thread's cache and run by the float row functions
// (cpu/fp16_rows.hpp). A channel's rows are prefetched one image ahead. Leaves out Welford (the
// sums must be all-reducible).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"

namespace sb::kernels::cpu {

namespace {

// The row functions' bodies, inlined into one vector-cloned function per storage type below.
// The sums are vectorised reductions: their order follows the vector width the compiler picks
// for the storage type, so a bf16 row's sums may differ from its widened float row's in the last
// bits; every elementwise result is the same bits.
template <class S>
[[gnu::always_inline]] inline void row_sum_and_squares_of(const S* x, i64 n, double& sum, double& sum_sq) {
  double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (i64 i = 0; i < n; ++i) {
    const double v = widened(x[i]);
    a += v;
    b += v * v;
  }
  sum = a;
  sum_sq = b;
}

// y = (x - m)·scale + shift (+ residual), then ReLU.
template <class S>
[[gnu::always_inline]] inline void apply_row_of(S* y, const S* x, float m, float scale, float shift,
                                                const S* residual, bool relu, i64 n) {
  if (residual) {
    if (relu) {
      for (i64 i = 0; i < n; ++i)
        y[i] = stored<S>(std::max((widened(x[i]) - m) * scale + shift + widened(residual[i]), 0.0f));
    } else {
      for (i64 i = 0; i < n; ++i) y[i] = stored<S>((widened(x[i]) - m) * scale + shift + widened(residual[i]));
    }
  } else if (relu) {
    for (i64 i = 0; i < n; ++i) y[i] = stored<S>(std::max((widened(x[i]) - m) * scale + shift, 0.0f));
  } else {
    for (i64 i = 0; i < n; ++i) y[i] = stored<S>((widened(x[i]) - m) * scale + shift);
  }
}

// Σdy and Σdy (x - m) of one row, dy masked by relu_out when given, in kSumLanes fixed lanes
// (element i into lane i mod kSumLanes, the lanes then added in order, the tail last): the same
// order wherever the row lies and whichever vector width runs it, where a reduction the
// compiler vectorises may peel to the row's alignment, and data-parallel ranks and one rank hold
// an image at different addresses. Every operand is read unconditionally, so that the mask
// compiles to a select.
constexpr i64 kSumLanes = 16;

template <class S>
[[gnu::always_inline]] inline void row_gradient_sums_of(const S* dy, const S* relu_out, const S* x, float m, i64 n,
                                                        float& dy_sum, float& dy_centred_sum) {
  const auto gradient = [=](i64 i) {
    const float d = widened(dy[i]);
    return relu_out ? (widened(relu_out[i]) > 0.0f ? d : 0.0f) : d;
  };
  float a[kSumLanes] = {}, b[kSumLanes] = {};
  const i64 whole = n - n % kSumLanes;
  for (i64 i = 0; i < whole; i += kSumLanes)
    for (i64 j = 0; j < kSumLanes; ++j) {
      const float g = gradient(i + j);
      a[j] += g;
      b[j] += g * (widened(x[i + j]) - m);
    }
  float a_sum = 0, b_sum = 0;
  for (i64 j = 0; j < kSumLanes; ++j) {
    a_sum += a[j];
    b_sum += b[j];
  }
  for (i64 i = whole; i < n; ++i) {
    const float g = gradient(i);
    a_sum += g;
    b_sum += g * (widened(x[i]) - m);
  }
  dy_sum = a_sum;
  dy_centred_sum = b_sum;
}

// dx = dy·a - (x - m)·b - c, with a = weight·rstd, b = rstd²·dnorm_norm_mean,
// c = rstd·dnorm_mean.
template <class S>
[[gnu::always_inline]] inline void backward_apply_row_of(S* dx, const S* dy, const S* relu_out, const S* x, float m,
                                                         float a, float b, float c, i64 n) {
  if (relu_out) {
    for (i64 i = 0; i < n; ++i) {
      const float d = widened(dy[i]);
      dx[i] = stored<S>((widened(relu_out[i]) > 0.0f ? d : 0.0f) * a - (widened(x[i]) - m) * b - c);
    }
  } else {
    for (i64 i = 0; i < n; ++i) dx[i] = stored<S>(widened(dy[i]) * a - (widened(x[i]) - m) * b - c);
  }
}

// One vector-cloned function per row body and storage type.
#define SB_BATCHNORM_ROW_FUNCTIONS(S)                                                                           \
  SB_CPU_VECTOR_CLONES void row_sum_and_squares(const S* x, i64 n, double& sum, double& sum_sq) {              \
    row_sum_and_squares_of(x, n, sum, sum_sq);                                                                 \
  }                                                                                                            \
  SB_CPU_VECTOR_CLONES void apply_row(S* y, const S* x, float m, float scale, float shift, const S* residual, \
                                      bool relu, i64 n) {                                                      \
    apply_row_of(y, x, m, scale, shift, residual, relu, n);                                                    \
  }                                                                                                            \
  SB_CPU_VECTOR_CLONES void row_gradient_sums(const S* dy, const S* relu_out, const S* x, float m, i64 n,      \
                                              float& dy_sum, float& dy_centred_sum) {                          \
    row_gradient_sums_of(dy, relu_out, x, m, n, dy_sum, dy_centred_sum);                                       \
  }                                                                                                            \
  SB_CPU_VECTOR_CLONES void backward_apply_row(S* dx, const S* dy, const S* relu_out, const S* x, float m,     \
                                               float a, float b, float c, i64 n) {                             \
    backward_apply_row_of(dx, dy, relu_out, x, m, a, b, c, n);                                                 \
  }
SB_BATCHNORM_ROW_FUNCTIONS(float)
SB_BATCHNORM_ROW_FUNCTIONS(bf16)
#undef SB_BATCHNORM_ROW_FUNCTIONS

#if defined(__x86_64__)
// fp16 with AVX-512: sixteen values at a time widened in registers, the row body's expression as
// the float rows compile it (GCC contracts (x - m)·scale + shift into one fma, and
// dy·a - (x - m)·b into an fmsub of the product; the tests hold the bits equal), each result
// narrowed in registers: one pass over the row where the thread's-cache path makes four.
SB_AVX512_TARGET void apply_row_avx512(fp16* y, const fp16* x, float m, float scale, float shift,
                                       const fp16* residual, bool relu, i64 n) {
  const __m512 mean = _mm512_set1_ps(m), scales = _mm512_set1_ps(scale), shifts = _mm512_set1_ps(shift),
               zero = _mm512_setzero_ps();
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    __m512 v = _mm512_fmadd_ps(_mm512_sub_ps(widened16(x + i, mask), mean), scales, shifts);
    if (residual) v = _mm512_add_ps(v, widened16(residual + i, mask));
    if (relu) v = _mm512_maskz_max_ps(mask, zero, v);  // std::max(v, 0): v unless v < 0 (NaN and -0 kept)
    store_narrowed(y + i, v, mask);
  }
}

SB_AVX512_TARGET void backward_apply_row_avx512(fp16* dx, const fp16* dy, const fp16* relu_out, const fp16* x,
                                                float m, float a, float b, float c, i64 n) {
  const __m512 mean = _mm512_set1_ps(m), as = _mm512_set1_ps(a), bs = _mm512_set1_ps(b), cs = _mm512_set1_ps(c),
               zero = _mm512_setzero_ps();
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    __m512 d = widened16(dy + i, mask);
    if (relu_out) d = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(widened16(relu_out + i, mask), zero, _CMP_GT_OQ), d);
    const __m512 centred = _mm512_mul_ps(_mm512_sub_ps(widened16(x + i, mask), mean), bs);
    store_narrowed(dx + i, _mm512_sub_ps(_mm512_fmsub_ps(d, as, centred), cs), mask);
  }
}

// Σdy and Σdy (x - m) in the float rows' sixteen fixed lanes (one register), the lanes then added
// in order and the tail last: the same bits as the float row of the widened values.
SB_AVX512_TARGET void row_gradient_sums_avx512(const fp16* dy, const fp16* relu_out, const fp16* x, float m, i64 n,
                                               float& dy_sum, float& dy_centred_sum) {
  static_assert(kSumLanes == 16, "one AVX-512 register of float lanes");
  const __m512 mean = _mm512_set1_ps(m), zero = _mm512_setzero_ps();
  const __mmask16 all = first_lanes(16);
  __m512 a = zero, b = zero;
  const i64 whole = n - n % kSumLanes;
  for (i64 i = 0; i < whole; i += kSumLanes) {
    __m512 g = widened16(dy + i, all);
    if (relu_out) g = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(widened16(relu_out + i, all), zero, _CMP_GT_OQ), g);
    a = _mm512_add_ps(a, g);
    b = _mm512_fmadd_ps(g, _mm512_sub_ps(widened16(x + i, all), mean), b);
  }
  alignas(64) float a_lanes[kSumLanes], b_lanes[kSumLanes];
  _mm512_store_ps(a_lanes, a);
  _mm512_store_ps(b_lanes, b);
  float a_sum = 0, b_sum = 0;
  for (i64 j = 0; j < kSumLanes; ++j) {
    a_sum += a_lanes[j];
    b_sum += b_lanes[j];
  }
  for (i64 i = whole; i < n; ++i) {
    const float d = widened(dy[i]);
    const float g = relu_out ? (widened(relu_out[i]) > 0.0f ? d : 0.0f) : d;
    a_sum += g;
    b_sum += g * (widened(x[i]) - m);
  }
  dy_sum = a_sum;
  dy_centred_sum = b_sum;
}

// Σx and Σx² in double, eight lanes a half register (the order the float rows' vectorised
// reduction picks is its own: the sums agree to rounding, as bf16's do).
SB_AVX512_TARGET void row_sum_and_squares_avx512(const fp16* x, i64 n, double& sum, double& sum_sq) {
  __m512d a = _mm512_setzero_pd(), b = _mm512_setzero_pd();
  for (i64 i = 0; i < n; i += 16) {
    const __m512 v = widened16(x + i, first_lanes(n - i));
    for (const __m256 half : {_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1)}) {
      const __m512d w = _mm512_maskz_cvtps_pd(0xFF, half);
      a = _mm512_add_pd(a, w);
      b = _mm512_fmadd_pd(w, w, b);
    }
  }
  alignas(64) double a_lanes[8], b_lanes[8];
  _mm512_store_pd(a_lanes, a);
  _mm512_store_pd(b_lanes, b);
  sum = sum_sq = 0;
  for (int j = 0; j < 8; ++j) {
    sum += a_lanes[j];
    sum_sq += b_lanes[j];
  }
}

#endif

// fp16: each row widened into the thread's cache, the float row function run there (the elementwise
// passes in registers where the CPU has AVX-512, below).
void row_sum_and_squares(const fp16* x, i64 n, double& sum, double& sum_sq) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return row_sum_and_squares_avx512(x, n, sum, sum_sq);
#endif
  WidenedRows rows(n);
  row_sum_and_squares(rows.in(x), n, sum, sum_sq);
}

void apply_row(fp16* y, const fp16* x, float m, float scale, float shift, const fp16* residual, bool relu, i64 n) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return apply_row_avx512(y, x, m, scale, shift, residual, relu, n);
#endif
  WidenedRows rows(n);
  const float* x_values = rows.in(x);
  const float* residual_values = rows.in(residual);
  apply_row(rows.out(y), x_values, m, scale, shift, residual_values, relu, n);
  rows.narrow();
}
void row_gradient_sums(const fp16* dy, const fp16* relu_out, const fp16* x, float m, i64 n, float& dy_sum,
                       float& dy_centred_sum) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return row_gradient_sums_avx512(dy, relu_out, x, m, n, dy_sum, dy_centred_sum);
#endif
  WidenedRows rows(n);
  const float* dy_values = rows.in(dy);
  const float* relu_values = rows.in(relu_out);
  row_gradient_sums(dy_values, relu_values, rows.in(x), m, n, dy_sum, dy_centred_sum);
}
void backward_apply_row(fp16* dx, const fp16* dy, const fp16* relu_out, const fp16* x, float m, float a, float b,
                        float c, i64 n) {
#if defined(__x86_64__)
  if (avx512_kernels_run()) return backward_apply_row_avx512(dx, dy, relu_out, x, m, a, b, c, n);
#endif
  WidenedRows rows(n);
  const float* dy_values = rows.in(dy);
  const float* relu_values = rows.in(relu_out);
  const float* x_values = rows.in(x);
  backward_apply_row(rows.out(dx), dy_values, relu_values, x_values, m, a, b, c, n);
  rows.narrow();
}

// A channel's rows lie C * HW values apart, each a few cache lines (a 7x7 plane is 98 bytes in
// 16 bits), too short for the hardware prefetcher to follow: the next image's row of the channel
// is asked for while this one is summed, so the loop runs at memory bandwidth, not latency.
template <class S>
void prefetch_row(const S* row, i64 n) {
  if (!row) return;
  const char* bytes = reinterpret_cast<const char*>(row);
  const i64 size = n * static_cast<i64>(sizeof(S));
  for (i64 offset = 0; offset < size; offset += 64) __builtin_prefetch(bytes + offset);
}

template <class S>
void channel_sums(double* sums, const S* inp, i64 N, i64 C, i64 HW) {
  parallel_for_each("sb::batchnorm2d_channel_sums", C, [=](i64 c) {
    double sum = 0, sum_sq = 0;
    for (i64 n = 0; n < N; ++n) {
      if (n + 1 < N) prefetch_row(inp + ((n + 1) * C + c) * HW, HW);
      double a = 0, b = 0;
      row_sum_and_squares(inp + (n * C + c) * HW, HW, a, b);
      sum += a;
      sum_sq += b;
    }
    sums[c] = sum;
    sums[C + c] = sum_sq;
  });
}

template <class S>
void forward_apply(S* out, const S* inp, const float* mean, const float* rstd, const S* weight, const S* bias,
                   const S* residual, bool relu, i64 N, i64 C, i64 HW) {
  parallel_for_each("sb::batchnorm2d_forward_apply", N * C, [=](i64 nc) {
    const i64 c = nc % C;
    apply_row(out + nc * HW, inp + nc * HW, mean[c], rstd[c] * widened(weight[c]), widened(bias[c]),
              residual ? residual + nc * HW : nullptr, relu, HW);
  });
}

template <class S>
void backward_sums(double* sums, float* dweight, float* dbias, const S* dout, const S* relu_out, const S* inp,
                   const float* mean, const float* rstd, i64 N, i64 C, i64 HW) {
  parallel_for_each("sb::batchnorm2d_backward_sums", C, [=](i64 c) {
    const float m = mean[c];
    double dy_sum = 0, dy_centred_sum = 0;
    for (i64 n = 0; n < N; ++n) {
      const i64 row = (n * C + c) * HW;
      if (n + 1 < N) {
        const i64 next = row + C * HW;
        prefetch_row(dout + next, HW);
        prefetch_row(relu_out ? relu_out + next : nullptr, HW);
        prefetch_row(inp + next, HW);
      }
      float a = 0, b = 0;
      row_gradient_sums(dout + row, relu_out ? relu_out + row : nullptr, inp + row, m, HW, a, b);
      dy_sum += a;
      dy_centred_sum += b;
    }
    const double dy_norm_sum = dy_centred_sum * rstd[c];
    sums[c] = dy_sum;
    sums[C + c] = dy_norm_sum;
    dweight[c] += static_cast<float>(dy_norm_sum);
    dbias[c] += static_cast<float>(dy_sum);
  });
}

// dx = rstd (dy weight - dnorm_mean - (x - m) rstd dnorm_norm_mean), constants per channel.
template <class S>
void backward_apply(S* dinp, const S* dout, const S* relu_out, const S* inp, const S* weight, const float* mean,
                    const float* rstd, const double* sums, double count, i64 N, i64 C, i64 HW) {
  parallel_for_each("sb::batchnorm2d_backward_apply", N * C, [=](i64 nc) {
    const i64 c = nc % C;
    const double s = rstd[c], w = widened(weight[c]);
    const double dnorm_mean = w * sums[c] / count, dnorm_norm_mean = w * sums[C + c] / count;
    const double b = s * s * dnorm_norm_mean;
    const i64 row = nc * HW;
    backward_apply_row(dinp + row, dout + row, relu_out ? relu_out + row : nullptr, inp + row, mean[c],
                       static_cast<float>(w * s), static_cast<float>(b), static_cast<float>(s * dnorm_mean), HW);
  });
}

}  // namespace

SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(float, float) { channel_sums(sums, inp, N, C, HW); }
SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(bf16, float) { channel_sums(sums, inp, N, C, HW); }
SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(fp16, float) { channel_sums(sums, inp, N, C, HW); }

// C values: one thread, double, rounded once (as the reference).
SB_DECLARE_BATCHNORM2D_STATISTICS(float, float) {
  SB_CHECK(count > 1, "batchnorm2d_statistics: needs more than one value per channel, got {}",
           count);
  for (i64 c = 0; c < C; ++c) {
    const double m = sums[c] / count;
    const double biased_var = std::max(0.0, sums[C + c] / count - m * m);
    mean[c] = static_cast<float>(m);
    rstd[c] = static_cast<float>(1.0 / std::sqrt(biased_var + eps));
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * m);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] +
                                        momentum * biased_var * count / (count - 1));
  }
}

SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(float, float) {
  forward_apply(out, inp, mean, rstd, weight, bias, residual, relu, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(bf16, float) {
  forward_apply(out, inp, mean, rstd, weight, bias, residual, relu, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(fp16, float) {
  forward_apply(out, inp, mean, rstd, weight, bias, residual, relu, N, C, HW);
}

SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(float, float) {
  backward_sums(sums, dweight, dbias, dout, relu_out, inp, mean, rstd, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(bf16, float) {
  backward_sums(sums, dweight, dbias, dout, relu_out, inp, mean, rstd, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(fp16, float) {
  backward_sums(sums, dweight, dbias, dout, relu_out, inp, mean, rstd, N, C, HW);
}

SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(float, float) {
  backward_apply(dinp, dout, relu_out, inp, weight, mean, rstd, sums, count, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(bf16, float) {
  backward_apply(dinp, dout, relu_out, inp, weight, mean, rstd, sums, count, N, C, HW);
}
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(fp16, float) {
  backward_apply(dinp, dout, relu_out, inp, weight, mean, rstd, sums, count, N, C, HW);
}

}  // namespace sb::kernels::cpu
