// SPDX-License-Identifier: Apache-2.0
// GELU (tanh approximation) with Kokkos over chunks, each chunk one vectorised loop using the
// branch-free tanh of vector_math.hpp; written once over the storage type (float, and bf16 as
// it lies: cpu/sixteen_bit_elementwise.hpp), one expression for both, contracted alike; fp16 a
// chunk at a time widened into the thread's cache and run by the float chunk (cpu/fp16_rows.hpp).
// Leaves out the erf form of GELU.
#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace sb::kernels::cpu {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

template <class S>
[[gnu::always_inline]] inline void gelu_forward_of(S* out, const S* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float x = widened(inp[i]);
    out[i] = stored<S>(0.5f * x * (1.0f + tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x))));
  }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 a x^2).
template <class S>
[[gnu::always_inline]] inline void gelu_backward_of(S* dinp, const S* inp, const S* dout, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float x = widened(inp[i]);
    const float tanh_u = tanh_approx(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float local_grad =
        0.5f * (1.0f + tanh_u) +
        0.5f * x * (1.0f - tanh_u * tanh_u) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    dinp[i] = stored<S>(widened(dinp[i]) + local_grad * widened(dout[i]));
  }
}

#define SB_GELU_CHUNKS(S)                                                                       \
  SB_CPU_VECTOR_CLONES void gelu_forward_chunk(S* out, const S* inp, i64 n) { gelu_forward_of(out, inp, n); } \
  SB_CPU_VECTOR_CLONES void gelu_backward_chunk(S* dinp, const S* inp, const S* dout, i64 n) {                 \
    gelu_backward_of(dinp, inp, dout, n);                                                                      \
  }
SB_GELU_CHUNKS(float)
SB_GELU_CHUNKS(bf16)
#undef SB_GELU_CHUNKS

// fp16: the chunk widened into the thread's cache, the float chunk function run there.
void gelu_forward_chunk(fp16* out, const fp16* inp, i64 n) {
  WidenedRows rows(n);
  const float* x = rows.in(inp);
  gelu_forward_chunk(rows.out(out), x, n);
  rows.narrow();
}
void gelu_backward_chunk(fp16* dinp, const fp16* inp, const fp16* dout, i64 n) {
  WidenedRows rows(n);
  const float* x = rows.in(inp);
  const float* dy = rows.in(dout);
  gelu_backward_chunk(rows.inout(dinp), x, dy, n);
  rows.narrow();
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
