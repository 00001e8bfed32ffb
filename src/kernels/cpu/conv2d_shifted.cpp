// SPDX-License-Identifier: Apache-2.0
// Register tiles of the shifted-plane convolution products (see conv2d_shifted.hpp): 4 weight
// rows × 24 grid columns for the forward-shaped product, 4 output channels × 3 taps for the
// weight gradient. Leaves out the loops over images and the choice of path (conv2d.cpp).
#include "kernels/cpu/conv2d_shifted.hpp"

#include <algorithm>

#include "core/check.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SB_SHIFTED_X86 1
#define SB_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define SB_SHIFTED_X86 0
#endif

namespace sb::kernels::cpu {

void shifted_pad_planes(float* padded, const float* images, const ShiftedConvolution& s) {
  const i64 Wrow = s.Wrow(), Wi = s.Wi(), Hq = s.Hq(), plane = s.plane(), top = s.top();
  const i64 left = s.left(), st = s.stride, image_size = s.C * s.H * s.W;
  for (i64 c = 0; c < s.C; ++c)
    for (i64 a = 0; a < st; ++a)
      for (i64 b = 0; b < st; ++b) {
        float* p = padded + ((c * st + a) * st + b) * plane;
        const i64 rows = (s.H - a + st - 1) / st, cols = (s.W - b + st - 1) / st;
        std::fill(p, p + top * Wrow, 0.0f);  // top rows
        for (i64 i = 0; i < rows; ++i) {
          float* row = p + (top + i) * Wrow;
          for (i64 n = 0; n < s.images; ++n) {
            float* dst = row + n * Wi;
            const float* src = images + n * image_size + (c * s.H + st * i + a) * s.W + b;
            for (i64 x = 0; x < left; ++x) dst[x] = 0.0f;
            if (st == 1) {
              std::copy(src, src + cols, dst + left);
            } else {
              for (i64 j = 0; j < cols; ++j) dst[left + j] = src[st * j];
            }
            for (i64 x = left + cols; x < Wi; ++x) dst[x] = 0.0f;
          }
          for (i64 x = s.images * Wi; x < Wrow; ++x) row[x] = 0.0f;
        }
        std::fill(p + (top + rows) * Wrow, p + Hq * Wrow, 0.0f);  // bottom rows
      }
  std::fill(padded + s.planes() * plane, padded + s.padded_floats(), 0.0f);
}

void shifted_tap_offsets(i64* offsets, const ShiftedConvolution& s) {
  const i64 Wrow = s.Wrow(), plane = s.plane(), st = s.stride;
  for (i64 c = 0; c < s.C; ++c)
    for (i64 kh = 0; kh < s.KH; ++kh)
      for (i64 kw = 0; kw < s.KW; ++kw) {
        const i64 dy = ShiftedConvolution::floor_div(kh - s.pad, st);
        const i64 dx = ShiftedConvolution::floor_div(kw - s.pad, st);
        const i64 a = kh - s.pad - st * dy, b = kw - s.pad - st * dx;
        *offsets++ = ((c * st + a) * st + b) * plane + (s.top() + dy) * Wrow + s.left() + dx;
      }
}

void shifted_pack_weight(float* packed, const float* weight, i64 rows, i64 K) {
  for (i64 block = 0; block < shifted_grid_rows(rows) / 4; ++block)
    for (i64 k = 0; k < K; ++k)
      for (i64 r = 0; r < 4; ++r) {
        const i64 row = block * 4 + r;
        packed[(block * K + k) * 4 + r] = row < rows ? weight[row * K + k] : 0.0f;
      }
}

#if SB_SHIFTED_X86

bool shifted_convolution_supported() {
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
}

namespace {

// The register tiles are written out accumulator by accumulator: GCC keeps an array of __m256
// accumulators on the stack, storing every one of them on each iteration.

// grid rows 4 × columns [j, j + 24) = Σ_k packed (k, 4) ⊗ padded[offsets[k] + j, + 24)
SB_AVX2_FMA inline void product_tile_24(float* grid, i64 ldg, const float* packed,
                                        const float* padded, const i64* offsets, i64 K, i64 j) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
  __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
  const float* base = padded + j;
  for (i64 k = 0; k < K; ++k) {
    const float* b = base + offsets[k];
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), b2 = _mm256_loadu_ps(b + 16);
    const float* a = packed + 4 * k;
    __m256 w = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(w, b0, c00);
    c01 = _mm256_fmadd_ps(w, b1, c01);
    c02 = _mm256_fmadd_ps(w, b2, c02);
    w = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(w, b0, c10);
    c11 = _mm256_fmadd_ps(w, b1, c11);
    c12 = _mm256_fmadd_ps(w, b2, c12);
    w = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(w, b0, c20);
    c21 = _mm256_fmadd_ps(w, b1, c21);
    c22 = _mm256_fmadd_ps(w, b2, c22);
    w = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(w, b0, c30);
    c31 = _mm256_fmadd_ps(w, b1, c31);
    c32 = _mm256_fmadd_ps(w, b2, c32);
  }
  float* g = grid + j;
  _mm256_storeu_ps(g, c00);
  _mm256_storeu_ps(g + 8, c01);
  _mm256_storeu_ps(g + 16, c02);
  g += ldg;
  _mm256_storeu_ps(g, c10);
  _mm256_storeu_ps(g + 8, c11);
  _mm256_storeu_ps(g + 16, c12);
  g += ldg;
  _mm256_storeu_ps(g, c20);
  _mm256_storeu_ps(g + 8, c21);
  _mm256_storeu_ps(g + 16, c22);
  g += ldg;
  _mm256_storeu_ps(g, c30);
  _mm256_storeu_ps(g + 8, c31);
  _mm256_storeu_ps(g + 16, c32);
}

// The same for columns [j, j + 8): the grid rows' last few columns.
SB_AVX2_FMA inline void product_tile_8(float* grid, i64 ldg, const float* packed,
                                       const float* padded, const i64* offsets, i64 K, i64 j) {
  __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
  const float* base = padded + j;
  for (i64 k = 0; k < K; ++k) {
    const __m256 b = _mm256_loadu_ps(base + offsets[k]);
    const float* a = packed + 4 * k;
    c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a), b, c0);
    c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 1), b, c1);
    c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 2), b, c2);
    c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 3), b, c3);
  }
  _mm256_storeu_ps(grid + j, c0);
  _mm256_storeu_ps(grid + ldg + j, c1);
  _mm256_storeu_ps(grid + 2 * ldg + j, c2);
  _mm256_storeu_ps(grid + 3 * ldg + j, c3);
}

SB_AVX2_FMA inline float horizontal_sum(__m256 x) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

SB_AVX2_FMA inline void store_sums(float* dweight, i64 K, bool accumulate, i64 rows, i64 taps,
                                   const __m256 (&sums)[4][3]) {
  for (i64 r = 0; r < rows; ++r)
    for (i64 t = 0; t < taps; ++t) {
      float& w = dweight[r * K + t];
      const float sum = horizontal_sum(sums[r][t]);
      w = accumulate ? w + sum : sum;
    }
}

// dweight rows [0, rows) × taps [0, 3) of the tile (rows <= 4): dot products over the grid of
// 4 dout rows with 3 shifted planes.
SB_AVX2_FMA inline void weight_gradient_tile_3(float* dweight, i64 K, bool accumulate, i64 rows,
                                               const float* dout_grid, i64 ldg,
                                               const float* padded, const i64* offsets) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
  __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
  const float *p0 = padded + offsets[0], *p1 = padded + offsets[1], *p2 = padded + offsets[2];
  const float *d0 = dout_grid, *d1 = d0 + ldg, *d2 = d1 + ldg, *d3 = d2 + ldg;
  for (i64 q = 0; q < ldg; q += 8) {
    const __m256 b0 = _mm256_loadu_ps(p0 + q), b1 = _mm256_loadu_ps(p1 + q),
                 b2 = _mm256_loadu_ps(p2 + q);
    __m256 d = _mm256_loadu_ps(d0 + q);
    c00 = _mm256_fmadd_ps(d, b0, c00);
    c01 = _mm256_fmadd_ps(d, b1, c01);
    c02 = _mm256_fmadd_ps(d, b2, c02);
    d = _mm256_loadu_ps(d1 + q);
    c10 = _mm256_fmadd_ps(d, b0, c10);
    c11 = _mm256_fmadd_ps(d, b1, c11);
    c12 = _mm256_fmadd_ps(d, b2, c12);
    d = _mm256_loadu_ps(d2 + q);
    c20 = _mm256_fmadd_ps(d, b0, c20);
    c21 = _mm256_fmadd_ps(d, b1, c21);
    c22 = _mm256_fmadd_ps(d, b2, c22);
    d = _mm256_loadu_ps(d3 + q);
    c30 = _mm256_fmadd_ps(d, b0, c30);
    c31 = _mm256_fmadd_ps(d, b1, c31);
    c32 = _mm256_fmadd_ps(d, b2, c32);
  }
  const __m256 sums[4][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32}};
  store_sums(dweight, K, accumulate, rows, 3, sums);
}

// The same for one tap (the last K mod 3).
SB_AVX2_FMA inline void weight_gradient_tile_1(float* dweight, i64 K, bool accumulate, i64 rows,
                                               const float* dout_grid, i64 ldg,
                                               const float* padded, const i64* offsets) {
  __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
  const float* p = padded + offsets[0];
  for (i64 q = 0; q < ldg; q += 8) {
    const __m256 b = _mm256_loadu_ps(p + q);
    c0 = _mm256_fmadd_ps(_mm256_loadu_ps(dout_grid + q), b, c0);
    c1 = _mm256_fmadd_ps(_mm256_loadu_ps(dout_grid + ldg + q), b, c1);
    c2 = _mm256_fmadd_ps(_mm256_loadu_ps(dout_grid + 2 * ldg + q), b, c2);
    c3 = _mm256_fmadd_ps(_mm256_loadu_ps(dout_grid + 3 * ldg + q), b, c3);
  }
  const __m256 zero = _mm256_setzero_ps();
  const __m256 sums[4][3] = {{c0, zero, zero}, {c1, zero, zero}, {c2, zero, zero}, {c3, zero, zero}};
  store_sums(dweight, K, accumulate, rows, 1, sums);
}

}  // namespace

// Grid strips outermost: a strip's shifted rows (C·KH rows of ~24 floats) stay in L1 while every
// block of 4 weight rows passes over them.
SB_AVX2_FMA void shifted_product(float* grid, const float* packed, const float* padded,
                                 const i64* offsets, i64 rows, const ShiftedConvolution& s) {
  const i64 K = s.taps(), ldg = s.grid_stride(), blocks = shifted_grid_rows(rows) / 4;
  i64 j = 0;
  for (; j + 24 <= ldg; j += 24)
    for (i64 block = 0; block < blocks; ++block)
      product_tile_24(grid + block * 4 * ldg, ldg, packed + block * 4 * K, padded, offsets, K, j);
  for (; j < ldg; j += 8)
    for (i64 block = 0; block < blocks; ++block)
      product_tile_8(grid + block * 4 * ldg, ldg, packed + block * 4 * K, padded, offsets, K, j);
}

SB_AVX2_FMA void shifted_weight_gradient(float* dweight, bool accumulate, const float* dout_grid,
                                         const float* padded, const i64* offsets,
                                         const ShiftedConvolution& s) {
  const i64 K = s.taps(), ldg = s.grid_stride();
  for (i64 o = 0; o < s.OC; o += 4) {
    const i64 rows = std::min<i64>(4, s.OC - o);
    const float* d = dout_grid + o * ldg;
    float* dw = dweight + o * K;
    i64 k = 0;
    for (; k + 3 <= K; k += 3)
      weight_gradient_tile_3(dw + k, K, accumulate, rows, d, ldg, padded, offsets + k);
    for (; k < K; ++k)
      weight_gradient_tile_1(dw + k, K, accumulate, rows, d, ldg, padded, offsets + k);
  }
}

#else  // not x86-64 with GCC-style vector extensions: conv2d.cpp never takes this path

bool shifted_convolution_supported() { return false; }

void shifted_product(float*, const float*, const float*, const i64*, i64,
                     const ShiftedConvolution&) {
  SB_CHECK(false, "shifted_product needs an x86-64 CPU with AVX2 and FMA");
}

void shifted_weight_gradient(float*, bool, const float*, const float*, const i64*,
                             const ShiftedConvolution&) {
  SB_CHECK(false, "shifted_weight_gradient needs an x86-64 CPU with AVX2 and FMA");
}

#endif

}  // namespace sb::kernels::cpu
