// SPDX-License-Identifier: Apache-2.0
// ReLU with Kokkos over chunks, each chunk one vectorised loop; the backward masks with the
// forward output, so the forward may run in place. The backward also over bf16 and fp16 as they
// lie (cpu/sixteen_bit_elementwise.hpp): bf16 widened in registers, fp16 a chunk at a time into
// the thread's cache; the sum rounded once. Leaves out leaky and clipped variants.
#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "precision/bf16.hpp"

namespace sb::kernels::cpu {

namespace {

SB_CPU_VECTOR_CLONES
void relu_forward_chunk(float* out, const float* inp, i64 n) {
  for (i64 i = 0; i < n; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

// The gradient at 0 is 0, as in PyTorch (threshold_backward on the output).
SB_CPU_VECTOR_CLONES
void relu_backward_chunk(float* dinp, const float* out, const float* dout, i64 n) {
  for (i64 i = 0; i < n; ++i) dinp[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

SB_CPU_VECTOR_CLONES
void relu_backward_chunk(bf16* dinp, const bf16* out, const bf16* dout, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float d = to_float(dout[i]);  // read unconditionally: the mask compiles to a select
    dinp[i] = to_bf16(to_float(dinp[i]) + (to_float(out[i]) > 0.0f ? d : 0.0f));
  }
}

// fp16: the chunk widened into the thread's cache, the float chunk function run there.
void relu_backward_chunk(fp16* dinp, const fp16* out, const fp16* dout, i64 n) {
  WidenedRows rows(n);
  const float* out_values = rows.in(out);
  const float* dy = rows.in(dout);
  relu_backward_chunk(rows.inout(dinp), out_values, dy, n);
  rows.narrow();
}

}  // namespace

SB_DECLARE_RELU_FORWARD(float, float) {
  parallel_for_chunks("sb::relu_forward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    relu_forward_chunk(out + begin, inp + begin, end - begin);
  });
}

SB_DECLARE_RELU_BACKWARD(float, float) {
  parallel_for_chunks("sb::relu_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    relu_backward_chunk(dinp + begin, out + begin, dout + begin, end - begin);
  });
}

SB_DECLARE_RELU_BACKWARD(bf16, float) {
  parallel_for_chunks("sb::relu_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    relu_backward_chunk(dinp + begin, out + begin, dout + begin, end - begin);
  });
}

SB_DECLARE_RELU_BACKWARD(fp16, float) {
  parallel_for_chunks("sb::relu_backward", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    relu_backward_chunk(dinp + begin, out + begin, dout + begin, end - begin);
  });
}

}  // namespace sb::kernels::cpu
