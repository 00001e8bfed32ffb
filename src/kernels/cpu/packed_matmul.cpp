// SPDX-License-Identifier: Apache-2.0
// The three GEMMs of a 16-bit linear layer, C (M,N) += A (M,K) . B (K,N), as BLIS runs them:
// B packed in depth blocks of kDepth rows, each block in panels of kNr columns ([k][kNr], zero
// beyond N); A packed per task in kMr-row panels; a 6x64 tile of fp32 sums in registers per
// micro-kernel call, added onto C once per depth block. Widening to fp32 happens in the
// packing, 16 values per instruction, into buffers that stay in the core's cache.
//   forward  out  (BT,OC) = inp (BT,C) . weight^T  (+ bias): M=BT, N=OC, K=C
//   dinp     dinp (BT,C) += dout (BT,OC) . weight:           M=BT, N=C,  K=OC
//   dweight  dweight (OC,C) += dout^T . inp (BT,C):          M=OC, N=C,  K=BT
// The first two pack the whole weight once and give each task kRows rows of A and of an fp32
// C buffer, rounded to S once at the end; the third walks K in depth blocks (inp's rows packed
// as B, shared), each task adding its rows of dweight in place. Every C value is summed by one
// task in a fixed order, whatever the thread count.
#include "kernels/cpu/packed_matmul.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/check.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sb::kernels::cpu {

#if defined(__x86_64__)

namespace {

constexpr int kMr = 6;                    // tile rows: one broadcast each
constexpr int kVectors = 4;               // tile columns in 16-float vectors
constexpr i64 kNr = 16 * kVectors;        // 64 tile columns
constexpr i64 kDepth = 512;               // K per packed block: a B panel is 128 KiB
constexpr i64 kTaskFloats = i64{1} << 17; // 512 KiB of A rows and C rows per task
constexpr i64 kAlign = 16;                // floats: 64 bytes

i64 round_up(i64 n, i64 to) { return (n + to - 1) / to * to; }
i64 panels_of(i64 N) { return (N + kNr - 1) / kNr; }

// Rows per task of an M-row GEMM, at most `most` (a multiple of kMr): the tasks as even as kMr
// rows allow and their count a multiple of the threads', so that no thread waits on the last
// one. Where a task's rows begin changes no result: each row sums in the same order.
i64 balanced_rows(i64 M, i64 most) {
  const i64 threads = std::max<i64>(1, HostSpace().concurrency());
  const i64 tasks = round_up((M + most - 1) / most, threads);
  return std::min(most, round_up((M + tasks - 1) / tasks, kMr));
}

// Rows of A (and of the C buffer) per task for the forward and input-gradient GEMMs: as many
// kMr panels as fit kTaskFloats with K + N floats a row, at least one panel, at most 16.
i64 task_rows(i64 M, i64 K, i64 N) {
  const i64 panels = std::clamp<i64>(kTaskFloats / ((K + N) * kMr), 1, 16);
  return balanced_rows(M, panels * kMr);
}

// ---- the micro-kernel: C (rows, cols of a kMr x kNr tile; ldc) += A . B over depth. B is a
// packed panel ([k][kNr]); A is a row panel (a[i*lda + k]) when ARows, else packed ([k][kMr]).
template <bool ARows>
SB_AVX512_TARGET void tile(i64 depth, const float* a, i64 lda, const float* b, float* c, i64 ldc, i64 rows,
                           i64 cols) {
  __m512 sums[kMr][kVectors];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sums[i][v] = _mm512_setzero_ps();
  for (i64 k = 0; k < depth; ++k) {
    __m512 bk[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) bk[v] = _mm512_loadu_ps(b + k * kNr + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 aik = _mm512_set1_ps(ARows ? a[i * lda + k] : a[k * kMr + i]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) sums[i][v] = _mm512_fmadd_ps(aik, bk[v], sums[i][v]);
    }
  }
  for (int i = 0; i < kMr && i < rows; ++i) {
    for (int v = 0; v < kVectors && 16 * v < cols; ++v) {
      const __mmask16 mask = first_lanes(cols - 16 * v);
      float* row = c + i * ldc + 16 * v;
      _mm512_mask_storeu_ps(row, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, row), sums[i][v]));
    }
  }
}

// ---- packing B

// One depth block of B (depth, N) with B[k][n] = src[k*ld + n] (rows of k: the weight for the
// input gradient, inp for the weight gradient), panel p's rows: dst (depth, kNr) at p·depth·kNr.
template <class S>
SB_AVX512_TARGET void pack_b_panel_rows_of_k(float* dst, const S* src, i64 ld, i64 depth, i64 N, i64 p) {
  const i64 n0 = p * kNr, width = std::min(kNr, N - n0);
  float* panel = dst + p * depth * kNr;
  for (i64 k = 0; k < depth; ++k) {
    const S* row = src + k * ld + n0;
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const i64 left = width - 16 * v;
      const __m512 values = left > 0 ? widened16(row + 16 * v, first_lanes(left)) : _mm512_setzero_ps();
      _mm512_storeu_ps(panel + k * kNr + 16 * v, values);
    }
  }
}

// Every depth block of B (K, N) with B[k][n] = weight[n*K + k] (the forward's weight^T),
// panel p: its kNr weight rows widened one at a time and spread down the panel's columns.
template <class S>
SB_AVX512_TARGET void pack_b_panel_rows_of_n(float* packed, const S* weight, i64 K, i64 N, i64 p, float* row) {
  const i64 panels = panels_of(N);
  for (i64 j = 0; j < kNr; ++j) {
    const i64 n = p * kNr + j;
    if (n < N)
      widen_values(row, weight + n * K, K);
    else
      std::fill(row, row + K, 0.0f);
    for (i64 k0 = 0; k0 < K; k0 += kDepth) {
      const i64 depth = std::min(kDepth, K - k0);
      float* panel = packed + k0 * panels * kNr + p * depth * kNr;
      for (i64 k = 0; k < depth; ++k) panel[k * kNr + j] = row[k0 + k];
    }
  }
}

// ---- the forward and input-gradient GEMMs: C (M,N) = c_init + A (M,K) . B, A's rows
// K-contiguous, B packed whole, C rounded to S.

// How a task's fp32 C rows start: the bias in every row, zero, or the widened rows of C.
enum class Start { bias, zero, accumulate };

template <class S>
SB_AVX512_TARGET void row_block(S* c, const S* a, const float* packed, const float* bias, Start start, i64 r0,
                                i64 rows, i64 M_rows_per_task, i64 K, i64 N) {
  const i64 padded_rows = round_up(rows, kMr), lda = round_up(K, kAlign), ldc = N;
  float* a_rows = thread_scratch(M_rows_per_task * lda + M_rows_per_task * ldc + kAlign);
  float* c_rows = a_rows + M_rows_per_task * lda;
  for (i64 r = 0; r < padded_rows; ++r) {
    if (r < rows)
      widen_values(a_rows + r * lda, a + (r0 + r) * K, K);
    else
      std::fill(a_rows + r * lda, a_rows + r * lda + K, 0.0f);
  }
  S* c_block = c + r0 * N;
  if (start == Start::accumulate) {
    widen_values(c_rows, c_block, rows * N);
  } else {
    for (i64 r = 0; r < rows; ++r) {
      if (start == Start::bias)
        std::memcpy(c_rows + r * ldc, bias, static_cast<std::size_t>(N) * sizeof(float));
      else
        std::fill(c_rows + r * ldc, c_rows + r * ldc + N, 0.0f);
    }
  }
  const i64 panels = panels_of(N);
  for (i64 k0 = 0; k0 < K; k0 += kDepth) {
    const i64 depth = std::min(kDepth, K - k0);
    const float* block = packed + k0 * panels * kNr;
    for (i64 p = 0; p < panels; ++p)
      for (i64 i = 0; i < rows; i += kMr)
        tile<true>(depth, a_rows + i * lda + k0, lda, block + p * depth * kNr, c_rows + i * ldc + p * kNr, ldc,
                   rows - i, N - p * kNr);
  }
  narrow_values(c_block, c_rows, rows * N);
}

template <class S>
void rows_times_packed(const char* label, S* c, const S* a, const float* packed, const float* bias, Start start,
                       i64 M, i64 K, i64 N) {
  const i64 rows_per_task = task_rows(M, K, N), tasks = (M + rows_per_task - 1) / rows_per_task;
  parallel_for_each_dynamic(label, tasks, [=](i64 t) {
    const i64 r0 = t * rows_per_task;
    row_block(c, a, packed, bias, start, r0, std::min(rows_per_task, M - r0), rows_per_task, K, N);
  });
}

// ---- the weight gradient: dweight (OC,C) += dout^T . inp, one depth block of BT at a time.

// Rows [m0, m0 + rows) of dweight for depth rows of dout/inp from k0: A packed [k][kMr] from
// dout's rows (each k holds the rows' values side by side), column sums of dout into sums.
template <class S>
SB_AVX512_TARGET void weight_gradient_block(float* dweight, float* sums, const S* dout, const float* packed_inp,
                                            i64 k0, i64 depth, i64 m0, i64 rows, i64 OC, i64 C) {
  const i64 padded_rows = round_up(rows, kMr), row_panels = padded_rows / kMr;
  float* a_panels = thread_scratch(padded_rows * depth + padded_rows + kAlign);
  float* values = a_panels + padded_rows * depth;
  for (i64 k = 0; k < depth; ++k) {
    const S* row = dout + (k0 + k) * OC + m0;
    for (i64 i = 0; i < padded_rows; i += 16) {
      const i64 left = rows - i;
      const __m512 v = left > 0 ? widened16(row + i, first_lanes(left)) : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(values + i, first_lanes(padded_rows - i), v);
    }
    if (sums)
      for (i64 i = 0; i < rows; ++i) sums[m0 + i] += values[i];
    for (i64 q = 0; q < row_panels; ++q)
      std::memcpy(a_panels + q * depth * kMr + k * kMr, values + q * kMr, kMr * sizeof(float));
  }
  const i64 panels = panels_of(C);
  for (i64 p = 0; p < panels; ++p)
    for (i64 q = 0; q < row_panels; ++q)
      tile<false>(depth, a_panels + q * depth * kMr, kMr, packed_inp + p * depth * kNr,
                  dweight + (m0 + q * kMr) * C + p * kNr, C, rows - q * kMr, C - p * kNr);
}

template <class S>
void weight_gradient(WideningScratch& scratch, float* dweight, float* dbias, const S* dout, const S* inp, i64 BT,
                     i64 C, i64 OC) {
  const i64 panels = panels_of(C);
  float* packed = scratch.take(panels * kNr * kDepth);
  float* sums = nullptr;
  if (dbias) {
    sums = scratch.take(OC);
    std::fill(sums, sums + OC, 0.0f);
  }
  const i64 rows_per_task = balanced_rows(OC, 8 * kMr), tasks = (OC + rows_per_task - 1) / rows_per_task;
  for (i64 k0 = 0; k0 < BT; k0 += kDepth) {
    const i64 depth = std::min(kDepth, BT - k0);
    const S* inp_rows = inp + k0 * C;
    parallel_for_each("sb::packed_matmul::pack_inp", panels,
                      [=](i64 p) { pack_b_panel_rows_of_k(packed, inp_rows, C, depth, C, p); });
    parallel_for_each_dynamic("sb::packed_matmul::weight_gradient", tasks, [=](i64 t) {
      const i64 m0 = t * rows_per_task;
      weight_gradient_block(dweight, sums, dout, packed, k0, depth, m0, std::min(rows_per_task, OC - m0), OC, C);
    });
  }
  if (dbias)
    for (i64 m = 0; m < OC; ++m) dbias[m] += sums[m];
}

}  // namespace

template <class S>
void packed_matmul_forward(WideningScratch& scratch, S* out, const S* inp, const S* weight, const S* bias, i64 BT,
                           i64 C, i64 OC) {
  SB_CHECK(BT > 0 && C > 0 && OC > 0, "packed_matmul_forward: empty extents BT={} C={} OC={}", BT, C, OC);
  const i64 panels = panels_of(OC);
  float* packed = scratch.take(panels * kNr * C);
  parallel_for_each("sb::packed_matmul::pack_weight", panels, [=](i64 p) {
    pack_b_panel_rows_of_n(packed, weight, C, OC, p, thread_scratch(round_up(C, kAlign)));
  });
  float* bias_values = nullptr;
  if (bias) {
    bias_values = scratch.take(OC);
    widen_values(bias_values, bias, OC);
  }
  rows_times_packed("sb::packed_matmul::forward", out, inp, packed, bias_values, bias ? Start::bias : Start::zero, BT,
                    C, OC);
}

template <class S>
void packed_matmul_backward(WideningScratch& scratch, S* dinp, float* dweight, float* dbias, const S* dout,
                            const S* inp, const S* weight, i64 BT, i64 C, i64 OC) {
  SB_CHECK(BT > 0 && C > 0 && OC > 0, "packed_matmul_backward: empty extents BT={} C={} OC={}", BT, C, OC);
  // dinp += dout . weight: B = weight (OC, C), rows of k
  const i64 panels = panels_of(C);
  float* packed = scratch.take(panels * kNr * OC);
  const i64 blocks = (OC + kDepth - 1) / kDepth;
  parallel_for_each("sb::packed_matmul::pack_weight", blocks * panels, [=](i64 task) {
    const i64 k0 = task / panels * kDepth, p = task % panels;
    pack_b_panel_rows_of_k(packed + k0 * panels * kNr, weight + k0 * C, C, std::min(kDepth, OC - k0), C, p);
  });
  rows_times_packed("sb::packed_matmul::input_gradient", dinp, dout, packed, nullptr, Start::accumulate, BT, OC, C);
  weight_gradient(scratch, dweight, dbias, dout, inp, BT, C, OC);
}

#else  // not x86-64: cpu_runs_avx512_kernels() is false and nothing calls these

template <class S>
void packed_matmul_forward(WideningScratch&, S*, const S*, const S*, const S*, i64, i64, i64) {
  SB_CHECK(false, "packed_matmul_forward: needs an x86-64 CPU with AVX-512");
}
template <class S>
void packed_matmul_backward(WideningScratch&, S*, float*, float*, const S*, const S*, const S*, i64, i64, i64) {
  SB_CHECK(false, "packed_matmul_backward: needs an x86-64 CPU with AVX-512");
}

#endif

template void packed_matmul_forward<bf16>(WideningScratch&, bf16*, const bf16*, const bf16*, const bf16*, i64, i64,
                                          i64);
template void packed_matmul_forward<fp16>(WideningScratch&, fp16*, const fp16*, const fp16*, const fp16*, i64, i64,
                                          i64);
template void packed_matmul_backward<bf16>(WideningScratch&, bf16*, float*, float*, const bf16*, const bf16*,
                                           const bf16*, i64, i64, i64);
template void packed_matmul_backward<fp16>(WideningScratch&, fp16*, float*, float*, const fp16*, const fp16*,
                                           const fp16*, i64, i64, i64);

}  // namespace sb::kernels::cpu
