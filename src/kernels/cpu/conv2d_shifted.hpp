// SPDX-License-Identifier: Apache-2.0
// Convolutions without im2col: images are copied once into planes with their zero padding
// around them, so tap (kh, kw) of every output position is a plane read at one shift, and the
// products read K = C·KH·KW shifted views of those planes in place of a patch matrix 9 times
// the image. With stride s each channel is split into s×s phase planes (rows ≡ a, columns ≡ b
// mod s), in which a tap is again a shift. A few small images sit side by side in one plane,
// sharing the zero columns between them, and outputs are computed on the whole padded width:
// OH rows of Wrow columns, of which each image keeps OW; the rest are computed and discarded.
// AVX2+FMA register tiles, chosen at run time. Leaves out CPUs without AVX2+FMA (conv2d.cpp
// keeps im2col + BLAS for those).
#pragma once

#include <algorithm>

#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

// A convolution of `images` images in the padded phase layout: planes (C, s, s, Hq, Wrow);
// phase (a, b) of channel c holds the input rows s·i + a and columns s·j + b, row i at
// top() + i, image n's column j at n·Wi + left() + j. Tap (kh, kw) reads phase
// ((kh - pad) mod s, (kw - pad) mod s) shifted by floor((kh - pad) / s) rows (likewise
// columns). The output grid (OC, OH·Wrow) has its rows stored `grid_stride()` apart, image n's
// output column x at n·Wi + x.
struct ShiftedConvolution {
  i64 C, H, W, OC, KH, KW, pad, stride, images;

  static i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
  i64 OH() const { return (H + 2 * pad - KH) / stride + 1; }
  i64 OW() const { return (W + 2 * pad - KW) / stride + 1; }
  i64 phase_rows() const { return (H + stride - 1) / stride; }  // of phase a = 0, the most
  i64 phase_cols() const { return (W + stride - 1) / stride; }
  i64 top() const { return -floor_div(-pad, stride); }  // zero rows above row 0
  i64 left() const { return -floor_div(-pad, stride); }
  i64 last_row_shift() const { return floor_div(KH - 1 - pad, stride); }
  i64 last_col_shift() const { return floor_div(KW - 1 - pad, stride); }
  i64 Hq() const { return top() + std::max(phase_rows(), OH() + last_row_shift()); }
  // Columns per image: its data and the zeros on its right, which are also the next image's
  // left padding; at least OW, so that outputs of neighbours never overlap.
  i64 Wi() const {
    return std::max({OW() + last_col_shift(), left() + phase_cols(), OW()});
  }
  i64 Wrow() const { return images * Wi() + left(); }
  i64 plane() const { return Hq() * Wrow(); }
  i64 planes() const { return C * stride * stride; }
  i64 taps() const { return C * KH * KW; }    // K of the products
  i64 grid() const { return OH() * Wrow(); }  // output positions computed per channel
  i64 grid_stride() const { return (grid() + 7) / 8 * 8; }
  // Floats of the padded planes plus the tail that the last plane's discarded columns and the
  // last vector of a grid row read past them (kept zero).
  i64 padded_floats() const { return planes() * plane() + grid_stride() - grid() + KW + 8; }
};

// Rows of an output grid buffer: the products write whole register tiles of this many rows.
inline i64 shifted_grid_rows(i64 rows) { return (rows + 3) / 4 * 4; }

// AVX2 and FMA on this CPU (checked once).
bool shifted_convolution_supported();

// images (s.images, C, H, W) -> padded (s.padded_floats()): planes (C, s, s, Hq, Wrow) with
// zeros around and between the images, zero tail.
void shifted_pad_planes(float* padded, const float* images, const ShiftedConvolution& s);

// offsets (s.taps()): where tap (c, kh, kw) of output position 0 lies in the padded planes.
void shifted_tap_offsets(i64* offsets, const ShiftedConvolution& s);

// weight (rows, K) -> packed (shifted_grid_rows(rows) / 4, K, 4), the rows past `rows` zero.
void shifted_pack_weight(float* packed, const float* weight, i64 rows, i64 K);

// grid (shifted_grid_rows(rows), s.grid_stride()) = packed weight (rows, K = s.taps()) ·
// the shifted planes, K = s.taps() rows of s.grid_stride() columns.
void shifted_product(float* grid, const float* packed, const float* padded, const i64* offsets,
                     i64 rows, const ShiftedConvolution& s);

// dweight (OC, K = s.taps()) = (or += when accumulate) dout_grid · shifted planesᵀ, dout_grid
// (shifted_grid_rows(OC), s.grid_stride()) zero outside the OC rows of OH·Wrow values and zero in
// each row's discarded columns. Each element is summed in 8 lanes, then across them.
void shifted_weight_gradient(float* dweight, bool accumulate, const float* dout_grid,
                             const float* padded, const i64* offsets, const ShiftedConvolution& s);

}  // namespace sb::kernels::cpu
