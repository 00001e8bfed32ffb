// SPDX-License-Identifier: Apache-2.0
// Token + position embedding with Kokkos: forward parallel over tokens, backward parallel
// over owners of output rows/columns so repeated tokens never race. Leaves out sorting tokens.
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {
// dwte columns per backward task: one 64-byte cache line, so tasks never share a line.
constexpr i64 kEmbeddingColumnBlock = 16;
}  // namespace

SB_DECLARE_EMBEDDING_FORWARD(float, float) {
  parallel_for_each("sb::embedding_forward", B * T_, [=](i64 bt) {
    const i64 t = bt % T_;
    float* out_row = out + bt * C;
    const float* wte_row = wte + static_cast<i64>(tokens[bt]) * C;
    const float* wpe_row = wpe + t * C;
    for (i64 c = 0; c < C; ++c) out_row[c] = wte_row[c] + wpe_row[c];
  });
}

// dwpe: task t owns row t and adds the B rows of dout in batch order. dwte: a token may
// repeat anywhere in the batch, so a task owns a block of columns of every dwte row and walks
// all tokens in order - race free and independent of the thread count.
SB_DECLARE_EMBEDDING_BACKWARD(float, float) {
  parallel_for_each("sb::embedding_backward::dwpe", T_, [=](i64 t) {
    float* dwpe_row = dwpe + t * C;
    for (i64 b = 0; b < B; ++b) {
      const float* dout_row = dout + (b * T_ + t) * C;
      for (i64 c = 0; c < C; ++c) dwpe_row[c] += dout_row[c];
    }
  });
  const i64 blocks = (C + kEmbeddingColumnBlock - 1) / kEmbeddingColumnBlock;
  parallel_for_each("sb::embedding_backward::dwte", blocks, [=](i64 block) {
    const i64 c0 = block * kEmbeddingColumnBlock;
    const i64 width = std::min(kEmbeddingColumnBlock, C - c0);
    for (i64 bt = 0; bt < B * T_; ++bt) {
      float* dwte_row = dwte + static_cast<i64>(tokens[bt]) * C + c0;
      const float* dout_row = dout + bt * C + c0;
      for (i64 j = 0; j < width; ++j) dwte_row[j] += dout_row[j];
    }
  });
}

}  // namespace sb::kernels::cpu
