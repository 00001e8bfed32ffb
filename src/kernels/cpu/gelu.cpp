// SPDX-License-Identifier: Apache-2.0
// GELU (tanh approximation) with Kokkos over chunks, each chunk one vectorised loop using the
// branch-free tanh of vector_math.hpp; the expressions written once over a float or a vector of
// floats, contracted alike. Float runs them in a loop GCC vectorises; bf16 and fp16 (as they lie:
// cpu/sixteen_bit_elementwise.hpp) in AVX-512 registers where the kernels' AVX-512 paths run,
// sixteen values widened, computed and narrowed at a time, else bf16 in the vectorised loop and
// fp16 a chunk widened into the thread's cache and run by the float loop (cpu/fp16_rows.hpp):
// the same bits every way.
// Leaves out the erf form of GELU.
#include <type_traits>

#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/avx512_lanes.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/cpu/vector_math.hpp"

// GCC notes, where it instantiates vector_math.hpp's Floats16 exp and tanh for GELU's expressions
// (at the end of this file), that a Floats16 returned by a function compiled without AVX-512
// would change the ABI; they are always inlined into the AVX-512 loops, so no such function exists.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sb::kernels::cpu {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// y = gelu(x) = 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + a x^3); F is float or Floats16. Results go
// through a reference: clang refuses an AVX-512 function a Floats16 returned by value from one
// compiled without AVX-512 (these are, so that the float loops can inline them).
template <class F>
[[gnu::always_inline]] inline void gelu_of(F& y, const F& x) {
  y = 0.5f * x * (1.0f + tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

// dinp += gelu'(x) dout, gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 a x^2).
template <class F>
[[gnu::always_inline]] inline void gelu_backward_of(F& dinp, const F& x, const F& dout) {
  const F tanh_u = tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const F local_grad =
      0.5f * (1.0f + tanh_u) + 0.5f * x * (1.0f - tanh_u * tanh_u) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  dinp = dinp + local_grad * dout;
}

template <class S>
[[gnu::always_inline]] inline void gelu_forward_of(S* out, const S* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    float y;
    gelu_of(y, widened(inp[i]));
    out[i] = stored<S>(y);
  }
}

template <class S>
[[gnu::always_inline]] inline void gelu_backward_of(S* dinp, const S* inp, const S* dout, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    float d = widened(dinp[i]);
    gelu_backward_of(d, widened(inp[i]), widened(dout[i]));
    dinp[i] = stored<S>(d);
  }
}

#define SB_GELU_LOOPS(S)                                                                                       \
  SB_CPU_VECTOR_CLONES void gelu_forward_loop(S* out, const S* inp, i64 n) { gelu_forward_of(out, inp, n); } \
  SB_CPU_VECTOR_CLONES void gelu_backward_loop(S* dinp, const S* inp, const S* dout, i64 n) {                 \
    gelu_backward_of(dinp, inp, dout, n);                                                                     \
  }
SB_GELU_LOOPS(float)
SB_GELU_LOOPS(bf16)
#undef SB_GELU_LOOPS

#if defined(__x86_64__)
// 16-bit S with AVX-512: sixteen values at a time widened, run through the float loop's
// expressions and narrowed, in registers.
template <class S>
SB_AVX512_TARGET void gelu_forward_avx512(S* out, const S* inp, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    Floats16 y;
    gelu_of<Floats16>(y, widened16(inp + i, mask));
    store_narrowed(out + i, y, mask);
  }
}

template <class S>
SB_AVX512_TARGET void gelu_backward_avx512(S* dinp, const S* inp, const S* dout, i64 n) {
  for (i64 i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    Floats16 d = widened16(dinp + i, mask);
    gelu_backward_of<Floats16>(d, widened16(inp + i, mask), widened16(dout + i, mask));
    store_narrowed(dinp + i, d, mask);
  }
}
#endif

// One chunk of S: 16-bit S in registers with AVX-512 (above); else float and bf16 by the loop GCC
// vectorises over them as they lie, and fp16 widened into the thread's cache, the float loop run
// there.
template <class S>
void gelu_forward_chunk(S* out, const S* inp, i64 n) {
  if constexpr (!std::is_same_v<S, float>) {
#if defined(__x86_64__)
    if (avx512_kernels_run()) return gelu_forward_avx512(out, inp, n);
#endif
  }
  if constexpr (std::is_same_v<S, fp16>) {
    WidenedRows rows(n);
    const float* x = rows.in(inp);
    gelu_forward_loop(rows.out(out), x, n);
    rows.narrow();
  } else {
    gelu_forward_loop(out, inp, n);
  }
}

template <class S>
void gelu_backward_chunk(S* dinp, const S* inp, const S* dout, i64 n) {
  if constexpr (!std::is_same_v<S, float>) {
#if defined(__x86_64__)
    if (avx512_kernels_run()) return gelu_backward_avx512(dinp, inp, dout, n);
#endif
  }
  if constexpr (std::is_same_v<S, fp16>) {
    WidenedRows rows(n);
    const float* x = rows.in(inp);
    const float* dy = rows.in(dout);
    gelu_backward_loop(rows.inout(dinp), x, dy, n);
    rows.narrow();
  } else {
    gelu_backward_loop(dinp, inp, dout, n);
  }
}

template <class S>
void gelu_forward_all(S* out, const S* inp, i64 N) {
  parallel_for_chunks("sb::gelu_forward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    gelu_forward_chunk(out + begin, inp + begin, end - begin);
  });
}

template <class S>
void gelu_backward_all(S* dinp, const S* inp, const S* dout, i64 N) {
  parallel_for_chunks("sb::gelu_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    gelu_backward_chunk(dinp + begin, inp + begin, dout + begin, end - begin);
  });
}

}  // namespace

SB_DECLARE_GELU_FORWARD(float, float) { gelu_forward_all(out, inp, N); }
SB_DECLARE_GELU_FORWARD(bf16, float) { gelu_forward_all(out, inp, N); }
SB_DECLARE_GELU_FORWARD(fp16, float) { gelu_forward_all(out, inp, N); }
SB_DECLARE_GELU_BACKWARD(float, float) { gelu_backward_all(dinp, inp, dout, N); }
SB_DECLARE_GELU_BACKWARD(bf16, float) { gelu_backward_all(dinp, inp, dout, N); }
SB_DECLARE_GELU_BACKWARD(fp16, float) { gelu_backward_all(dinp, inp, dout, N); }

}  // namespace sb::kernels::cpu
