// SPDX-License-Identifier: Apache-2.0
// Residual connection with Kokkos over chunks: memory-bound, so plain vectorised loops, written
// once over the storage type (float, and bf16 as it lies: cpu/sixteen_bit_elementwise.hpp); bf16
// and fp16 in AVX-512 registers where the kernels' AVX-512 paths run, else bf16 in that loop and
// fp16 a chunk at a time widened into the thread's cache and run by the float loop
// (cpu/fp16_rows.hpp).
// Leaves out fusing the residual into neighbouring kernels.
#include <type_traits>

#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"

namespace sb::kernels::cpu {

namespace {

#define SB_RESIDUAL_LOOPS(S)                                                                  \
  SB_CPU_VECTOR_CLONES void residual_forward_loop(S* out, const S* a, const S* b, i64 n) {    \
    for (i64 i = 0; i < n; ++i) out[i] = stored<S>(widened(a[i]) + widened(b[i]));            \
  }                                                                                           \
  SB_CPU_VECTOR_CLONES void residual_backward_loop(S* da, S* db, const S* dout, i64 n) {      \
    for (i64 i = 0; i < n; ++i) {                                                             \
      const float d = widened(dout[i]);                                                       \
      da[i] = stored<S>(widened(da[i]) + d);                                                  \
      db[i] = stored<S>(widened(db[i]) + d);                                                  \
    }                                                                                         \
  }
SB_RESIDUAL_LOOPS(float)
SB_RESIDUAL_LOOPS(bf16)
#undef SB_RESIDUAL_LOOPS

#if defined(__x86_64__)
// 16-bit S with AVX-512: sixteen values at a time widened, added and narrowed in registers (the
// sum of two widened values rounded once, as the float loop's).
template <class S>
SB_AVX512_TARGET void residual_forward_avx512(S* out, const S* a, const S* b, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    store_narrowed(out + i, _mm512_add_ps(widened16(a + i, mask), widened16(b + i, mask)), mask);
  }
}

template <class S>
SB_AVX512_TARGET void residual_backward_avx512(S* da, S* db, const S* dout, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    const __m512 d = widened16(dout + i, mask);
    store_narrowed(da + i, _mm512_add_ps(widened16(da + i, mask), d), mask);
    store_narrowed(db + i, _mm512_add_ps(widened16(db + i, mask), d), mask);
  }
}
#endif

// One chunk of S: 16-bit S in registers with AVX-512 (above); else float and bf16 by the loop GCC
// vectorises over them as they lie, and fp16 widened into the thread's cache, the float loop run
// there.
template <class S>
void residual_forward_chunk(S* out, const S* a, const S* b, i64 n) {
  if constexpr (!std::is_same_v<S, float>) {
#if defined(__x86_64__)
    if (avx512_kernels_run()) return residual_forward_avx512(out, a, b, n);
#endif
  }
  if constexpr (std::is_same_v<S, fp16>) {
    WidenedRows rows(n);
    const float* a_values = rows.in(a);
    const float* b_values = rows.in(b);
    residual_forward_loop(rows.out(out), a_values, b_values, n);
    rows.narrow();
  } else {
    residual_forward_loop(out, a, b, n);
  }
}

template <class S>
void residual_backward_chunk(S* da, S* db, const S* dout, i64 n) {
  if constexpr (!std::is_same_v<S, float>) {
#if defined(__x86_64__)
    if (avx512_kernels_run()) return residual_backward_avx512(da, db, dout, n);
#endif
  }
  if constexpr (std::is_same_v<S, fp16>) {
    WidenedRows rows(n);
    const float* dy = rows.in(dout);
    float* da_values = rows.inout(da);
    residual_backward_loop(da_values, rows.inout(db), dy, n);
    rows.narrow();
  } else {
    residual_backward_loop(da, db, dout, n);
  }
}

template <class S>
void residual_forward_all(S* out, const S* a, const S* b, i64 N) {
  parallel_for_chunks("sb::residual_forward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    residual_forward_chunk(out + begin, a + begin, b + begin, end - begin);
  });
}

template <class S>
void residual_backward_all(S* da, S* db, const S* dout, i64 N) {
  parallel_for_chunks("sb::residual_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    residual_backward_chunk(da + begin, db + begin, dout + begin, end - begin);
  });
}

}  // namespace

SB_DECLARE_RESIDUAL_FORWARD(float, float) { residual_forward_all(out, a, b, N); }
SB_DECLARE_RESIDUAL_FORWARD(bf16, float) { residual_forward_all(out, a, b, N); }
SB_DECLARE_RESIDUAL_FORWARD(fp16, float) { residual_forward_all(out, a, b, N); }
SB_DECLARE_RESIDUAL_BACKWARD(float, float) { residual_backward_all(da, db, dout, N); }
SB_DECLARE_RESIDUAL_BACKWARD(bf16, float) { residual_backward_all(da, db, dout, N); }
SB_DECLARE_RESIDUAL_BACKWARD(fp16, float) { residual_backward_all(da, db, dout, N); }

}  // namespace sb::kernels::cpu
