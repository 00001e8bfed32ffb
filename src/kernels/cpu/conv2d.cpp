// SPDX-License-Identifier: Apache-2.0
// 2-D convolution (NCHW), Kokkos over images (or groups of small images): convolutions with
// kernels of at least stride x stride taps as shifted-plane products (conv2d_shifted.hpp, on
// AVX2 CPUs), the rest (1x1) as im2col + single-threaded OpenBLAS sgemm. Leaves out
// Winograd/FFT kernels, dilation and groups.
#include <cblas.h>

#include <climits>

#include "kernels/cpu/conv2d_im2col.hpp"
#include "kernels/cpu/conv2d_shifted.hpp"
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

// Partial dweight buffers of the backward: images are cut into this many groups (fewer when
// N is smaller, more when there are more threads), so up to 16 threads the sums do not
// depend on the thread count, and the reduction stays cheap beside the products.
constexpr i64 kMinWeightPartials = 16;

// One image's convolution as a matrix product: the patch matrix cols (C·KH·KW, OH·OW) holds
// in row (c,kh,kw) the input values seen by that tap at every output position.
struct ConvGeometry {
  i64 C, H, W, OC, KH, KW, stride, pad, OH, OW;
  i64 patch() const { return C * KH * KW; }  // rows of cols, columns of weight
  i64 positions() const { return OH * OW; }  // columns of cols and of one output map
  // 1x1, stride 1, no padding: cols is the image itself and im2col/col2im are skipped.
  bool is_pointwise() const { return KH == 1 && KW == 1 && stride == 1 && pad == 0; }
};

i64 output_extent(const char* label, i64 in, i64 kernel, i64 stride, i64 pad) {
  SB_CHECK(in >= 1 && kernel >= 1 && stride >= 1 && pad >= 0 && in + 2 * pad >= kernel,
           "{}: input extent {} with kernel {}, stride {}, padding {} has no output", label, in,
           kernel, stride, pad);
  return (in + 2 * pad - kernel) / stride + 1;
}

ConvGeometry make_geometry(const char* label, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW,
                           i64 stride, i64 pad) {
  const i64 OH = output_extent(label, H, KH, stride, pad);
  const i64 OW = output_extent(label, W, KW, stride, pad);
  const ConvGeometry g{C, H, W, OC, KH, KW, stride, pad, OH, OW};
  SB_CHECK(C >= 1 && OC >= 1 && g.patch() <= INT_MAX && g.positions() <= INT_MAX &&
               OC <= INT_MAX,
           "{}: C={} OC={} patch={} positions={} do not fit a 32-bit BLAS", label, C, OC,
           g.patch(), g.positions());
  return g;
}

// Output columns x whose tap kw lands inside the input: iw = x·stride + offset in [0, W) for x in
// [begin, end), possibly empty; offset = kw - pad.
struct ValidColumns {
  i64 begin, end, offset;
};

ValidColumns valid_columns(const ConvGeometry& g, i64 kw) {
  const i64 offset = kw - g.pad;
  const i64 begin = offset < 0 ? (-offset + g.stride - 1) / g.stride : 0;
  const i64 last_reach = g.W - 1 - offset;  // x·stride must not pass it
  const i64 end = last_reach < 0 ? 0 : std::min(g.OW, last_reach / g.stride + 1);
  return {begin, std::max(begin, end), offset};
}

// The zero runs of im2col are a few floats (a padding column, one row): stores, without GCC
// turning the loops back into memset calls.
#if defined(__GNUC__) && !defined(__clang__)
#define SB_NO_MEMSET_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define SB_NO_MEMSET_LOOPS
#endif

// Row (c, kh, kw) of cols when stride is 1 and OW == W ("same" width): the valid outputs read
// the plane c shifted by a constant, so the span from the first valid output to the last is
// one copy; the few columns in it that fall in the left/right padding are zeroed afterwards.
// One memcpy per tap instead of one per output row: small images (7x7) are call-bound.
SB_NO_MEMSET_LOOPS
void im2col_same_width_row(float* row, const float* image, const ConvGeometry& g, i64 c, i64 kh,
                           ValidColumns valid) {
  const i64 y0 = std::max<i64>(0, g.pad - kh), y1 = std::min(g.OH, g.H + g.pad - kh);
  if (y0 >= y1 || valid.begin >= valid.end) {
    std::fill(row, row + g.positions(), 0.0f);
    return;
  }
  const i64 first = y0 * g.OW + valid.begin, last = (y1 - 1) * g.OW + valid.end;
  const i64 shift = (c * g.H + kh - g.pad) * g.W + valid.offset;  // image index - cols index
  for (i64 i = 0; i < first; ++i) row[i] = 0.0f;
  std::copy(image + first + shift, image + last + shift, row + first);
  for (i64 i = last; i < g.positions(); ++i) row[i] = 0.0f;
  // A few columns per row (the padding): plain stores, not a memset call each.
  for (i64 y = y0; y < y1; ++y) {
    float* dst = row + y * g.OW;
    if (y > y0)
      for (i64 x = 0; x < valid.begin; ++x) dst[x] = 0.0f;
    if (y + 1 < y1)
      for (i64 x = valid.end; x < g.OW; ++x) dst[x] = 0.0f;
  }
}

// image (C,H,W) -> cols (C·KH·KW, OH·OW) with row stride ld >= OH·OW (a wider ld lays
// several images' patch matrices side by side), zeros where a tap falls in the padding.
SB_NO_MEMSET_LOOPS
void im2col(float* cols, const float* image, const ConvGeometry& g, i64 ld) {
  const bool same_width = g.stride == 1 && g.OW == g.W;
  for (i64 c = 0; c < g.C; ++c)
    for (i64 kh = 0; kh < g.KH; ++kh)
      for (i64 kw = 0; kw < g.KW; ++kw) {
        float* row = cols + ((c * g.KH + kh) * g.KW + kw) * ld;
        const ValidColumns valid = valid_columns(g, kw);
        if (same_width) {
          im2col_same_width_row(row, image, g, c, kh, valid);
          continue;
        }
        for (i64 y = 0; y < g.OH; ++y) {
          float* dst = row + y * g.OW;
          const i64 ih = y * g.stride - g.pad + kh;
          if (ih < 0 || ih >= g.H) {
            std::fill(dst, dst + g.OW, 0.0f);
            continue;
          }
          const float* src = image + (c * g.H + ih) * g.W;
          for (i64 x = 0; x < valid.begin; ++x) dst[x] = 0.0f;
          for (i64 x = valid.begin; x < valid.end; ++x) dst[x] = src[x * g.stride + valid.offset];
          for (i64 x = valid.end; x < g.OW; ++x) dst[x] = 0.0f;
        }
      }
}

// dcols (C·KH·KW, OH·OW) -> dimage (C,H,W) +=, the transpose of im2col. Taps are added in
// (c, kh, kw, y, x) order, so the sum order is fixed.
SB_CPU_VECTOR_CLONES
void col2im_add(float* dimage, const float* dcols, const ConvGeometry& g) {
  for (i64 c = 0; c < g.C; ++c)
    for (i64 kh = 0; kh < g.KH; ++kh)
      for (i64 kw = 0; kw < g.KW; ++kw) {
        const float* row = dcols + ((c * g.KH + kh) * g.KW + kw) * g.positions();
        const ValidColumns valid = valid_columns(g, kw);
        for (i64 y = 0; y < g.OH; ++y) {
          const i64 ih = y * g.stride - g.pad + kh;
          if (ih < 0 || ih >= g.H) continue;
          const float* src = row + y * g.OW;
          float* dst = dimage + (c * g.H + ih) * g.W;
          if (g.stride == 1) {
            for (i64 x = valid.begin; x < valid.end; ++x) dst[x + valid.offset] += src[x];
          } else {
            for (i64 x = valid.begin; x < valid.end; ++x)
              dst[x * g.stride + valid.offset] += src[x];
          }
        }
      }
}

// Row-major sgemm; every extent was checked against INT_MAX by make_geometry.
void sgemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, i64 m, i64 n, i64 k, const float* a,
           i64 lda, const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  cblas_sgemm(CblasRowMajor, trans_a, trans_b, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// dinp of a stride-1 convolution is itself a convolution: of dout with the weight transposed in
// (o, c) and flipped in (kh, kw), padding KH - 1 - pad, output (H, W). As a product that is
// (C, OC·KH·KW) · im2col(dout_n), accumulated straight into dinp_n: shaped like the forward's,
// where weightᵀ · dout_n has only OC terms per element and needs a col2im pass after it.
// Needs a square kernel and pad <= KH - 1 (the transposed convolution's padding is >= 0).
// Its im2col is OC/C times the size of col2im's dcols, so it only pays for OC <= C: measured
// 20-25% faster backward at C = OC (16, 32, 64), 4x slower at C = 1, OC = 16.
bool dinp_as_convolution(const ConvGeometry& g) {
  return g.stride == 1 && g.KH == g.KW && g.pad <= g.KH - 1 && g.OC <= g.C && !g.is_pointwise();
}

ConvGeometry transposed_geometry(const ConvGeometry& g) {
  return {g.OC, g.OH, g.OW, g.C, g.KH, g.KW, 1, g.KH - 1 - g.pad, g.H, g.W};
}

// weight (OC, C, KH, KW) -> flipped (C, OC, KH, KW), kh and kw reversed.
void transpose_flip_weight(float* flipped, const float* weight, const ConvGeometry& g) {
  for (i64 o = 0; o < g.OC; ++o)
    for (i64 c = 0; c < g.C; ++c)
      for (i64 kh = 0; kh < g.KH; ++kh)
        for (i64 kw = 0; kw < g.KW; ++kw)
          flipped[((c * g.OC + o) * g.KH + (g.KH - 1 - kh)) * g.KW + (g.KW - 1 - kw)] =
              weight[((o * g.C + c) * g.KH + kh) * g.KW + kw];
}

// The calling thread's buffer for the per-group partial dweights (and packed weights), reused
// across calls; kept apart from thread_scratch, which the calling thread also uses inside the
// parallel loop.
float* weight_partials_scratch(i64 count) {
  thread_local std::vector<float> partials;
  if (static_cast<i64>(partials.size()) < count) partials.resize(static_cast<std::size_t>(count));
  return partials.data();
}

// The calling thread's tap offsets of the shifted-plane products, reused across calls.
i64* tap_offsets_scratch(i64 count) {
  thread_local std::vector<i64> offsets;
  if (static_cast<i64>(offsets.size()) < count) offsets.resize(static_cast<std::size_t>(count));
  return offsets.data();
}

// Convolutions with a kernel of at least stride × stride taps (every phase plane read) take the
// shifted-plane products (conv2d_shifted.hpp) where the CPU has them; 1x1 ones stay products
// on the (subsampled) images. A task takes as many images side by side as make about
// kShiftedGroupPositions output positions (1 of 28x28, 4 of 14x14, 16 of 7x7), so that the
// discarded columns are one per image row and the products' rows are long; its padded planes
// stay within L2 (at most 64 x 9 x 129 floats).
constexpr i64 kShiftedGroupPositions = 800;

bool shifted_forward(const ConvGeometry& g) {
  return g.KH >= g.stride && g.KW >= g.stride && !(g.KH == 1 && g.KW == 1) &&
         shifted_convolution_supported();
}

// The backward's dweight takes the same products; its dinp (stride 1) is a stride-1
// convolution of dout (see dinp_as_convolution), which needs a square kernel and pad <= KH - 1.
// With a larger stride, or where that does not hold, dinp is weightᵀ · dout, col2im-added.
bool shifted_backward(const ConvGeometry& g) { return shifted_forward(g); }

bool shifted_transposed_dinp(const ConvGeometry& g) {
  return g.stride == 1 && g.KH == g.KW && g.pad <= g.KH - 1;
}

i64 shifted_group_images(const ConvGeometry& g) {
  return std::max<i64>(1, kShiftedGroupPositions / g.positions());
}

// Per group of images: grid (OC, OH·Wrow) = packed weight · the group's shifted planes, then
// each image's kept columns (plus bias) to out_n (OC, OH, OW).
void conv2d_forward_shifted(float* out, const float* inp, const float* weight, const float* bias,
                            i64 N, const ConvGeometry& g) {
  const i64 C = g.C, H = g.H, W = g.W, OC = g.OC, OH = g.OH, OW = g.OW;
  const i64 K = g.patch(), widest = shifted_group_images(g);
  const i64 groups =
      std::min(N, std::max((N + widest - 1) / widest, i64{HostSpace().concurrency()}));
  float* packed = weight_partials_scratch(shifted_grid_rows(OC) * K);
  shifted_pack_weight(packed, weight, OC, K);
  parallel_for_each_dynamic("sb::conv2d_forward::shifted", groups, [=](i64 group) {
    const i64 n_begin = group * N / groups, count = (group + 1) * N / groups - n_begin;
    const ShiftedConvolution s{C, H, W, OC, g.KH, g.KW, g.pad, g.stride, count};
    const i64 ldg = s.grid_stride(), Wrow = s.Wrow(), Wi = s.Wi();
    i64* offsets = tap_offsets_scratch(K);
    float* padded = thread_scratch(s.padded_floats() + shifted_grid_rows(OC) * ldg);
    float* grid = padded + s.padded_floats();
    shifted_tap_offsets(offsets, s);
    shifted_pad_planes(padded, inp + n_begin * C * H * W, s);
    shifted_product(grid, packed, padded, offsets, OC, s);
    for (i64 n = 0; n < count; ++n) {
      float* out_n = out + (n_begin + n) * OC * OH * OW;
      for (i64 o = 0; o < OC; ++o) {
        const float b = bias ? bias[o] : 0.0f;
        for (i64 y = 0; y < OH; ++y) {
          const float* src = grid + o * ldg + y * Wrow + n * Wi;
          float* dst = out_n + (o * OH + y) * OW;
          for (i64 x = 0; x < OW; ++x) dst[x] = src[x] + b;
        }
      }
    }
  });
}

// Per group of images (the weight gradient's partial), in chunks of images side by side, in
// image order: partial (OC, C·KH·KW) (+)= dout grid · the chunk's shifted planesᵀ; then
// dinp_n += either the kept columns of flipped weight (C, OC·KH·KW) · the shifted planes of
// dout padded by KH - 1 - pad (the transposed convolution), or col2im(weightᵀ · dout_n).
void conv2d_backward_shifted(float* dinp, float* partials, i64 groups, const float* dout,
                             const float* inp, const float* weight, i64 N, const ConvGeometry& g) {
  const i64 C = g.C, H = g.H, W = g.W, OC = g.OC, OH = g.OH, OW = g.OW;
  const i64 K = g.patch(), Kt = OC * g.KH * g.KW, weight_size = OC * K;
  const i64 positions = g.positions(), chunk = shifted_group_images(g);
  const bool transposed = dinp && shifted_transposed_dinp(g);
  float* packed = partials + groups * weight_size;  // flipped weight, (C, OC·KH·KW) packed
  if (transposed) {
    float* flipped = thread_scratch(C * Kt);  // free again before the loop below
    transpose_flip_weight(flipped, weight, g);
    shifted_pack_weight(packed, flipped, C, Kt);
  }
  parallel_for_each_dynamic("sb::conv2d_backward::shifted", groups, [=](i64 group) {
    const i64 n_begin = group * N / groups, n_end = (group + 1) * N / groups;
    float* partial = partials + group * weight_size;
    for (i64 n0 = n_begin; n0 < n_end; n0 += chunk) {
      const i64 count = std::min(chunk, n_end - n0);
      const ShiftedConvolution s{C, H, W, OC, g.KH, g.KW, g.pad, g.stride, count};
      const ShiftedConvolution t{OC, OH, OW, C, g.KH, g.KW, g.KH - 1 - g.pad, 1, count};
      const i64 ldg = s.grid_stride(), Wrow = s.Wrow(), Wi = s.Wi();
      const i64 dout_grid_floats = shifted_grid_rows(OC) * ldg;
      const i64 dinp_floats = !dinp        ? 0
                              : transposed ? t.padded_floats() + shifted_grid_rows(C) * t.grid_stride()
                                           : K * positions;
      i64* offsets = tap_offsets_scratch(K + Kt);
      float* padded = thread_scratch(s.padded_floats() + dout_grid_floats + dinp_floats);
      float* dout_grid = padded + s.padded_floats();  // (OC rounded up to 4, ldg)
      float* dinp_scratch = dout_grid + dout_grid_floats;
      const float* dout_first = dout + n0 * OC * OH * OW;
      shifted_tap_offsets(offsets, s);
      shifted_pad_planes(padded, inp + n0 * C * H * W, s);
      std::fill(dout_grid, dout_grid + dout_grid_floats, 0.0f);  // discarded columns: zero
      for (i64 n = 0; n < count; ++n)
        for (i64 o = 0; o < OC; ++o)
          for (i64 y = 0; y < OH; ++y) {
            const float* src = dout_first + ((n * OC + o) * OH + y) * OW;
            std::copy(src, src + OW, dout_grid + o * ldg + y * Wrow + n * Wi);
          }
      shifted_weight_gradient(partial, n0 != n_begin, dout_grid, padded, offsets, s);
      if (!dinp) continue;
      if (!transposed) {  // dcols (C·KH·KW, OH·OW) = weightᵀ · dout_n, col2im-added
        for (i64 n = n0; n < n0 + count; ++n) {
          sgemm(CblasTrans, CblasNoTrans, K, positions, OC, weight, K, dout + n * OC * positions,
                positions, 0.0f, dinp_scratch, positions);
          col2im_add(dinp + n * C * H * W, dinp_scratch, g);
        }
        continue;
      }
      const i64 ldt = t.grid_stride(), Wrow_t = t.Wrow(), Wi_t = t.Wi();
      float* dinp_grid = dinp_scratch + t.padded_floats();
      shifted_tap_offsets(offsets + K, t);
      shifted_pad_planes(dinp_scratch, dout_first, t);
      shifted_product(dinp_grid, packed, dinp_scratch, offsets + K, C, t);
      for (i64 n = 0; n < count; ++n)
        for (i64 c = 0; c < C; ++c)
          for (i64 y = 0; y < H; ++y) {
            const float* src = dinp_grid + c * ldt + y * Wrow_t + n * Wi_t;
            float* dst = dinp + (((n0 + n) * C + c) * H + y) * W;
            for (i64 x = 0; x < W; ++x) dst[x] += src[x];
          }
    }
  });
}

// Images with few output positions (7x7, 14x14) are taken in groups whose patch matrices
// sit side by side, cols (C·KH·KW, g·OH·OW), so that one product has up to kGroupPositions
// columns (16 images of 7x7, 4 of 14x14): per-image products that narrow spend their time in packing and edge cases.
constexpr i64 kGroupPositions = 800;

// Per group of images: out_g (OC, g·OH·OW) = weight (OC, C·KH·KW) · cols_g, then each image's
// columns copied to out_n (OC, OH·OW) (a single image writes out_n directly); bias rows are
// written first and accumulated onto (beta = 1). Groups are independent, one per task.
void conv2d_forward_paths(float* out, const float* inp, const float* weight, const float* bias,
                          i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad,
                          bool allow_shifted) {
  const ConvGeometry g = make_geometry("conv2d_forward", C, H, W, OC, KH, KW, stride, pad);
  if (allow_shifted && shifted_forward(g)) {
    conv2d_forward_shifted(out, inp, weight, bias, N, g);
    return;
  }
  const i64 patch = g.patch(), positions = g.positions();
  // As many groups as that allows, at least one per thread, images spread evenly.
  const i64 widest = g.is_pointwise() ? 1 : std::max<i64>(1, kGroupPositions / positions);
  const i64 groups =
      std::min(N, std::max((N + widest - 1) / widest, i64{HostSpace().concurrency()}));
  parallel_for_each_dynamic("sb::conv2d_forward", groups, [=](i64 group) {
    const i64 n_begin = group * N / groups, count = (group + 1) * N / groups - n_begin;
    const i64 width = count * positions;  // columns of cols and of the product
    float* out_first = out + n_begin * OC * positions;
    const float* cols = inp + n_begin * C * H * W;  // pointwise: the image itself
    float* product = out_first;
    if (!g.is_pointwise()) {
      float* scratch = thread_scratch(patch * width + (count > 1 ? OC * width : 0));
      for (i64 j = 0; j < count; ++j)
        im2col(scratch + j * positions, inp + (n_begin + j) * C * H * W, g, width);
      cols = scratch;
      if (count > 1) product = scratch + patch * width;
    }
    if (bias) {
      for (i64 o = 0; o < OC; ++o) std::fill(product + o * width, product + (o + 1) * width, bias[o]);
    }
    sgemm(CblasNoTrans, CblasNoTrans, OC, width, patch, weight, patch, cols, width,
          bias ? 1.0f : 0.0f, product, width);
    if (product == out_first) return;
    for (i64 j = 0; j < count; ++j)
      for (i64 o = 0; o < OC; ++o)
        std::copy(product + o * width + j * positions, product + o * width + (j + 1) * positions,
                  out_first + (j * OC + o) * positions);
  });
}

// Per image n:
//   shifted (see shifted_backward): conv2d_backward_shifted, no patch matrices;
//   transposed (stride 1, see dinp_as_convolution): one patch matrix, tcols_n = the transposed
//   im2col of dout_n (OC·KH·KW, H·W), serves both products: dinp_n += flipped · tcols_n, and
//   tcols_n · image_nᵀ (OC·KH·KW, C) is dweight with (kh, kw) flipped and c innermost, so
//   the partials are kept in that layout and permuted once when added to dweight;
//   otherwise, with cols_n rebuilt from the input:
//   dweight += dout_n (OC, OH·OW) · cols_nᵀ   into the partial of n's group, summed later;
//   dinp_n += weightᵀ · dout_n directly (1x1, stride 1), or dcols = weightᵀ · dout_n
//   col2im-added;
//   images own their dinp_n, so there are no races;
//   dbias += row sums of dout_n, per output channel.
// Groups are contiguous image ranges, each summed in image order, and the partials are added
// in group order: the result does not depend on which thread ran which group.
void conv2d_backward_paths(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, i64 N, i64 C, i64 H, i64 W,
                           i64 OC, i64 KH, i64 KW, i64 stride, i64 pad, bool allow_shifted) {
  const ConvGeometry g = make_geometry("conv2d_backward", C, H, W, OC, KH, KW, stride, pad);
  if (N <= 0) return;
  const i64 patch = g.patch(), positions = g.positions(), weight_size = OC * patch;
  const i64 concurrency = HostSpace().concurrency();
  const i64 groups = std::min(N, std::max(kMinWeightPartials, concurrency));
  const bool shifted = allow_shifted && shifted_backward(g);
  const bool transposed = !shifted && dinp && dinp_as_convolution(g);
  const ConvGeometry gt = transposed_geometry(g);
  // the partials, then the flipped weight (C, OC·KH·KW), packed in blocks of 4 rows if shifted
  float* partials = weight_partials_scratch(
      groups * weight_size + std::max(weight_size, shifted_grid_rows(C) * OC * KH * KW));
  float* flipped = partials + groups * weight_size;
  if (shifted) conv2d_backward_shifted(dinp, partials, groups, dout, inp, weight, N, g);
  if (transposed) transpose_flip_weight(flipped, weight, g);
  // cols_n, then dcols (patch, positions) or the transposed im2col of dout_n (OC·KH·KW, H·W)
  const i64 cols_size = g.is_pointwise() || transposed ? 0 : patch * positions;
  // transposed: a chunk of the group's images at a time, their patch matrices side by side
  // (as in the forward), with the images gathered and the dinp product before its scatter.
  const i64 chunk = transposed ? std::max<i64>(1, kGroupPositions / (H * W)) : 1;
  const i64 dinp_scratch_size = !dinp || g.is_pointwise() ? 0
                                : transposed ? (gt.patch() + 2 * C) * chunk * H * W
                                             : patch * positions;
  if (!shifted) parallel_for_each_dynamic("sb::conv2d_backward::images", groups, [=](i64 group) {
    const i64 n_begin = group * N / groups, n_end = (group + 1) * N / groups;
    float* partial = partials + group * weight_size;
    float* scratch = thread_scratch(cols_size + dinp_scratch_size);
    if (transposed) {
      const i64 HW = H * W;
      for (i64 n0 = n_begin; n0 < n_end; n0 += chunk) {
        const i64 count = std::min(chunk, n_end - n0), width = count * HW;
        float* tcols = scratch;  // (OC·KH·KW, width)
        for (i64 j = 0; j < count; ++j)
          im2col(tcols + j * HW, dout + (n0 + j) * OC * positions, gt, width);
        const float* images = inp + n0 * C * HW;  // (C, width): one image as it lies
        float* product = dinp + n0 * C * HW;      // (C, width): accumulated in place
        if (count > 1) {
          float* gathered = tcols + gt.patch() * width;
          for (i64 j = 0; j < count; ++j)
            for (i64 c = 0; c < C; ++c)
              std::copy(images + (j * C + c) * HW, images + (j * C + c + 1) * HW,
                        gathered + c * width + j * HW);
          images = gathered;
          product = gathered + C * width;
        }
        sgemm(CblasNoTrans, CblasTrans, gt.patch(), C, width, tcols, width, images, width,
              n0 == n_begin ? 0.0f : 1.0f, partial, C);
        sgemm(CblasNoTrans, CblasNoTrans, C, width, gt.patch(), flipped, gt.patch(), tcols, width,
              count > 1 ? 0.0f : 1.0f, product, width);
        if (count == 1) continue;
        for (i64 j = 0; j < count; ++j)
          for (i64 c = 0; c < C; ++c) {
            float* dst = dinp + ((n0 + j) * C + c) * HW;
            const float* src = product + c * width + j * HW;
            for (i64 i = 0; i < HW; ++i) dst[i] += src[i];
          }
      }
      return;
    }
    for (i64 n = n_begin; n < n_end; ++n) {
      const float* image = inp + n * C * H * W;
      const float* dout_n = dout + n * OC * positions;
      const float* cols = image;
      if (!g.is_pointwise()) {
        im2col(scratch, image, g, positions);
        cols = scratch;
      }
      sgemm(CblasNoTrans, CblasTrans, OC, patch, positions, dout_n, positions, cols, positions,
            n == n_begin ? 0.0f : 1.0f, partial, patch);
      if (!dinp) continue;
      float* dinp_n = dinp + n * C * H * W;
      float* dinp_scratch = scratch + cols_size;
      if (g.is_pointwise()) {  // dinp_n (C, HW) += weightᵀ · dout_n
        sgemm(CblasTrans, CblasNoTrans, C, positions, OC, weight, C, dout_n, positions, 1.0f,
              dinp_n, positions);
      } else {
        sgemm(CblasTrans, CblasNoTrans, patch, positions, OC, weight, patch, dout_n, positions,
              0.0f, dinp_scratch, positions);
        col2im_add(dinp_n, dinp_scratch, g);
      }
    }
  });
  // Partials are folded into the first one group by group (vectorised over elements), then
  // added to dweight once.
  parallel_for_chunks("sb::conv2d_backward::dweight", weight_size, kElementwiseChunk,
                      [=](i64 begin, i64 end) {
                        float* sum = partials;
                        for (i64 group = 1; group < groups; ++group) {
                          const float* partial = partials + group * weight_size;
                          for (i64 i = begin; i < end; ++i) sum[i] += partial[i];
                        }
                        if (transposed) return;
                        for (i64 i = begin; i < end; ++i) dweight[i] += sum[i];
                      });
  if (transposed) {  // sum (OC, KH, KW, C) with (kh, kw) flipped -> dweight (OC, C, KH, KW)
    parallel_for_each("sb::conv2d_backward::dweight_transposed", OC, [=](i64 o) {
      for (i64 c = 0; c < C; ++c)
        for (i64 kh = 0; kh < KH; ++kh)
          for (i64 kw = 0; kw < KW; ++kw)
            dweight[((o * C + c) * KH + kh) * KW + kw] +=
                partials[((o * KH + (KH - 1 - kh)) * KW + (KW - 1 - kw)) * C + c];
    });
  }
  if (!dbias) return;
  parallel_for_each("sb::conv2d_backward::dbias", OC, [=](i64 o) {
    double sum = 0;  // N·OH·OW terms: images' row sums are added in double
    for (i64 n = 0; n < N; ++n) {
      const float* row = dout + (n * OC + o) * positions;
      float row_sum = 0;
#pragma omp simd reduction(+ : row_sum)
      for (i64 i = 0; i < positions; ++i) row_sum += row[i];
      sum += row_sum;
    }
    dbias[o] += static_cast<float>(sum);
  });
}

}  // namespace

SB_DECLARE_CONV2D_FORWARD(float, float) {
  conv2d_forward_paths(out, inp, weight, bias, N, C, H, W, OC, KH, KW, stride, pad, true);
}

SB_DECLARE_CONV2D_BACKWARD(float, float) {
  conv2d_backward_paths(dinp, dweight, dbias, dout, inp, weight, N, C, H, W, OC, KH, KW, stride,
                        pad, true);
}

void conv2d_forward_im2col(float* out, const float* inp, const float* weight, const float* bias,
                           i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride,
                           i64 pad) {
  conv2d_forward_paths(out, inp, weight, bias, N, C, H, W, OC, KH, KW, stride, pad, false);
}

void conv2d_backward_im2col(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, i64 N, i64 C, i64 H, i64 W,
                            i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  conv2d_backward_paths(dinp, dweight, dbias, dout, inp, weight, N, C, H, W, OC, KH, KW, stride,
                        pad, false);
}

}  // namespace sb::kernels::cpu
