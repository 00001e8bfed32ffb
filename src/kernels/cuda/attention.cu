// CUDA causal multi-head attention, materialising att (B,NH,T,T) as the reference does: one
// block per (query position, head, batch). Backward writes the score gradients to scratch
// and gathers dk, dv per key position, so no two blocks write one element (no atomics, bit
// for bit repeatable). Leaves out flash-style tiling and tensor cores (later slices).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// One (b, t, h) row: scores q·k for t2 <= t into shared memory, softmax, att row, out row.
__global__ void attention_forward_rows(float* out, float* att, const float* qkv, i64 T, i64 C,
                                       i64 NH, float scale) {
  extern __shared__ float probs[];  // T floats
  const i64 t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const i64 hs = C / NH, C3 = 3 * C;
  const float* q = qkv + (b * T + t) * C3 + h * hs;
  float local_max = -INFINITY;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
    const float* k = qkv + (b * T + t2) * C3 + C + h * hs;
    float score = 0.0f;
    for (i64 i = 0; i < hs; ++i) score += q[i] * k[i];
    probs[t2] = score * scale;
    local_max = fmaxf(local_max, probs[t2]);
  }
  const float max_score = block_max(local_max);
  float local_sum = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
    probs[t2] = expf(probs[t2] - max_score);
    local_sum += probs[t2];
  }
  const float sum = block_sum(local_sum);
  float* att_row = att + ((b * NH + h) * T + t) * T;
  for (i64 t2 = threadIdx.x; t2 < T; t2 += blockDim.x) {
    const float p = t2 <= t ? probs[t2] / sum : 0.0f;
    if (t2 <= t) probs[t2] = p;
    att_row[t2] = p;
  }
  __syncthreads();
  float* o = out + (b * T + t) * C + h * hs;
  for (i64 i = threadIdx.x; i < hs; i += blockDim.x) {
    float acc = 0.0f;
    for (i64 t2 = 0; t2 <= t; ++t2) acc += probs[t2] * qkv[(b * T + t2) * C3 + 2 * C + h * hs + i];
    o[i] = acc;
  }
}

// One (b, t, h) row: datt = dy·v, dpreatt = att (datt - sum(att datt)) scale into
// dpreatt (B,NH,T,T), then dq += dpreatt·k.
__global__ void attention_backward_query_rows(float* dqkv, float* dpreatt, const float* dout,
                                              const float* qkv, const float* att, i64 T, i64 C,
                                              i64 NH, float scale) {
  extern __shared__ float dscores[];  // T floats
  const i64 t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const i64 hs = C / NH, C3 = 3 * C;
  const float* att_row = att + ((b * NH + h) * T + t) * T;
  const float* dy = dout + (b * T + t) * C + h * hs;
  float local_weighted = 0.0f;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
    const float* v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
    float d = 0.0f;
    for (i64 i = 0; i < hs; ++i) d += dy[i] * v[i];
    dscores[t2] = d;
    local_weighted += att_row[t2] * d;
  }
  const float weighted_sum = block_sum(local_weighted);
  float* dpre_row = dpreatt + ((b * NH + h) * T + t) * T;
  for (i64 t2 = threadIdx.x; t2 <= t; t2 += blockDim.x) {
    const float d = att_row[t2] * (dscores[t2] - weighted_sum) * scale;
    dscores[t2] = d;
    dpre_row[t2] = d;
  }
  __syncthreads();
  float* dq = dqkv + (b * T + t) * C3 + h * hs;
  for (i64 i = threadIdx.x; i < hs; i += blockDim.x) {
    float acc = 0.0f;
    for (i64 t2 = 0; t2 <= t; ++t2) acc += dscores[t2] * qkv[(b * T + t2) * C3 + C + h * hs + i];
    dq[i] += acc;
  }
}

// One (b, t2, h) key position: dk += sum over t >= t2 of dpreatt[t][t2] q[t];
// dv += sum over t >= t2 of att[t][t2] dy[t].
__global__ void attention_backward_key_rows(float* dqkv, const float* dpreatt, const float* dout,
                                            const float* qkv, const float* att, i64 T, i64 C,
                                            i64 NH) {
  const i64 t2 = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const i64 hs = C / NH, C3 = 3 * C;
  const float* dpre = dpreatt + (b * NH + h) * T * T;
  const float* probs = att + (b * NH + h) * T * T;
  float* dk = dqkv + (b * T + t2) * C3 + C + h * hs;
  float* dv = dqkv + (b * T + t2) * C3 + 2 * C + h * hs;
  for (i64 i = threadIdx.x; i < hs; i += blockDim.x) {
    float dk_acc = 0.0f, dv_acc = 0.0f;
    for (i64 t = t2; t < T; ++t) {
      dk_acc += dpre[t * T + t2] * qkv[(b * T + t) * C3 + h * hs + i];
      dv_acc += probs[t * T + t2] * dout[(b * T + t) * C + h * hs + i];
    }
    dk[i] += dk_acc;
    dv[i] += dv_acc;
  }
}

// One float per key position in shared memory, within the default 48 KiB of a block.
std::size_t row_shared_bytes(i64 T) {
  SB_CHECK(T <= 12288, "attention: T={} exceeds the 12288 positions a block holds", T);
  return static_cast<std::size_t>(T) * sizeof(float);
}

dim3 row_grid(i64 B, i64 T, i64 NH) {
  SB_CHECK(NH <= 65535 && B <= 65535, "attention: B={} or NH={} exceeds a grid dimension", B, NH);
  return dim3(static_cast<unsigned>(T), static_cast<unsigned>(NH), static_cast<unsigned>(B));
}

}  // namespace

SB_DECLARE_ATTENTION_FORWARD(float) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T_ == 0) return;
  CudaContext& ctx = default_context();
  const float scale = 1.0f / sqrtf(static_cast<float>(C / NH));
  const std::size_t shared = row_shared_bytes(T_);
  attention_forward_rows<<<row_grid(B, T_, NH), kRowThreads, shared, ctx.stream()>>>(
      out, att, qkv, T_, C, NH, scale);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_ATTENTION_BACKWARD(float) {
  SB_CHECK(NH > 0 && C % NH == 0, "attention: C={} is not a multiple of NH={}", C, NH);
  if (B * T_ == 0) return;
  CudaContext& ctx = default_context();
  const float scale = 1.0f / sqrtf(static_cast<float>(C / NH));
  auto* dpreatt = static_cast<float*>(
      ctx.scratch(static_cast<std::size_t>(B * NH * T_ * T_) * sizeof(float)));
  const std::size_t shared = row_shared_bytes(T_);
  attention_backward_query_rows<<<row_grid(B, T_, NH), kRowThreads, shared, ctx.stream()>>>(
      dqkv, dpreatt, dout, qkv, att, T_, C, NH, scale);
  SB_CUDA_CHECK_LAUNCH();
  attention_backward_key_rows<<<row_grid(B, T_, NH), 64, 0, ctx.stream()>>>(dqkv, dpreatt, dout,
                                                                             qkv, att, T_, C, NH);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::kernels::cuda
