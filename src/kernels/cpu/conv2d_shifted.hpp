// Stride-1 convolutions without im2col: images are copied once into planes with their zero
// padding around them, so tap (kh, kw) of every output position is the padded plane read at one
// shift, and the products read K = C·KH·KW shifted views of those planes in place of a patch
// matrix 9 times the image. A few small images sit side by side in one plane, sharing the zero
// columns between them, and outputs are computed on the whole padded width: OH rows of Wrow
// columns, of which each image keeps OW; the rest are computed and discarded. AVX2+FMA
// register tiles, chosen at run time. Leaves out strides above 1 and CPUs without AVX2+FMA
// (conv2d.cpp keeps im2col + BLAS for those).
#pragma once

#include <algorithm>

#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

// A stride-1 convolution of `images` images in the padded layout: planes (C, Hp, Wrow) where
// image n's column ix lies at n·Wi + pad + ix, and an output grid (OC, OH·Wrow) whose rows are
// stored `grid_stride()` apart, image n's output column x at n·Wi + x.
struct ShiftedConvolution {
  i64 C, H, W, OC, KH, KW, pad, images;

  i64 Hp() const { return H + 2 * pad; }
  i64 OH() const { return Hp() - KH + 1; }
  i64 OW() const { return W + 2 * pad - KW + 1; }
  // Columns per image: its data and the `pad` zeros on its right, which are the next image's
  // left padding; at least OW, so that outputs of neighbours never overlap.
  i64 Wi() const { return std::max(W + pad, OW()); }
  i64 Wrow() const { return images * Wi() + pad; }
  i64 plane() const { return Hp() * Wrow(); }
  i64 taps() const { return C * KH * KW; }    // K of the products
  i64 grid() const { return OH() * Wrow(); }  // output positions computed per channel
  i64 grid_stride() const { return (grid() + 7) / 8 * 8; }
  // Floats of the padded planes plus the tail that the last channel's discarded columns and the
  // last vector of a grid row read past them (kept zero).
  i64 padded_floats() const { return C * plane() + grid_stride() - grid() + KW + 8; }
};

// Rows of an output grid buffer: the products write whole register tiles of this many rows.
inline i64 shifted_grid_rows(i64 rows) { return (rows + 3) / 4 * 4; }

// AVX2 and FMA on this CPU (checked once).
bool shifted_convolution_supported();

// images (s.images, C, H, W) -> padded (s.padded_floats()): planes (C, Hp, Wrow) with zeros
// around and between the images, zero tail.
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
