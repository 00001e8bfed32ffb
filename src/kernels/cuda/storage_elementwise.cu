// SPDX-License-Identifier: Apache-2.0
// Native 16-bit GELU and residual kernels: float math on widened values, one rounding per
// stored result, 16-byte (8-value) loads and stores where every pointer allows them. Leaves out
// fusion with the neighbouring GEMM epilogue (cuBLASLt's GELU_AUX) and the fast tanh instruction.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"
#include "kernels/cuda/storage_types.cuh"

namespace sb::kernels::cuda::native {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// For every i < n: op(o, o2, x[i], y[i]) with o, o2 the widened out[i], out2[i] when kAccumulate
// (else 0), then out[i], out2[i] = the rounded o, o2. y and out2 may be nullptr (read as 0,
// skipped). `vector`: every pointer 16-byte aligned, so packs of 8 go in one access.
template <bool kAccumulate, class D, class Op>
__global__ void map_kernel(D* out, D* out2, const D* x, const D* y, i64 n, bool vector, Op op) {
  i64 scalar_begin = 0;
  if (vector) {
    const i64 packs = n / 8;
    for (i64 p = grid_index(); p < packs; p += grid_stride()) {
      const Pack8<D> xv = load8(x + 8 * p);
      Pack8<D> yv{}, ov{}, o2v{};
      if (y) yv = load8(y + 8 * p);
      if (kAccumulate) {
        ov = load8(out + 8 * p);
        if (out2) o2v = load8(out2 + 8 * p);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        float o = kAccumulate ? widen(ov.v[k]) : 0.0f, o2 = kAccumulate && out2 ? widen(o2v.v[k]) : 0.0f;
        op(o, o2, widen(xv.v[k]), y ? widen(yv.v[k]) : 0.0f);
        ov.v[k] = narrow<D>(o);
        o2v.v[k] = narrow<D>(o2);
      }
      store8(out + 8 * p, ov);
      if (out2) store8(out2 + 8 * p, o2v);
    }
    scalar_begin = packs * 8;
  }
  for (i64 i = scalar_begin + grid_index(); i < n; i += grid_stride()) {
    float o = kAccumulate ? widen(out[i]) : 0.0f, o2 = kAccumulate && out2 ? widen(out2[i]) : 0.0f;
    op(o, o2, widen(x[i]), y ? widen(y[i]) : 0.0f);
    out[i] = narrow<D>(o);
    if (out2) out2[i] = narrow<D>(o2);
  }
}

template <bool kAccumulate, class D, class Op>
void launch_map(D* out, D* out2, const D* x, const D* y, i64 n, Op op) {
  if (n <= 0) return;
  const bool vector = aligned16(out) && aligned16(out2) && aligned16(x) && aligned16(y);
  CudaContext& ctx = default_context();
  map_kernel<kAccumulate><<<blocks_for(vector ? (n + 7) / 8 : n), kThreads, 0, ctx.stream()>>>(out, out2, x, y, n,
                                                                                                 vector, op);
  SB_CUDA_CHECK_LAUNCH();
}

struct GeluForward {
  __device__ void operator()(float& o, float&, float x, float) const {
    o = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
};
struct GeluBackward {  // x = inp, y = dout
  __device__ void operator()(float& o, float&, float x, float dy) const {
    const float tanh_u = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float local_grad = 0.5f * (1.0f + tanh_u) +
                             0.5f * x * (1.0f - tanh_u * tanh_u) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    o += local_grad * dy;
  }
};
struct Add {
  __device__ void operator()(float& o, float&, float a, float b) const { o = a + b; }
};
struct FanOut {  // x = dout
  __device__ void operator()(float& da, float& db, float dy, float) const {
    da += dy;
    db += dy;
  }
};

}  // namespace

template <class S>
void gelu_forward(S* out, const S* inp, i64 N) {
  launch_map<false, Device<S>>(device_view(out), nullptr, device_view(inp), nullptr, N,
                    GeluForward{});
}

template <class S>
void gelu_backward(S* dinp, const S* inp, const S* dout, i64 N) {
  launch_map<true, Device<S>>(device_view(dinp), nullptr, device_view(inp), device_view(dout), N,
                   GeluBackward{});
}

template <class S>
void residual_forward(S* out, const S* a, const S* b, i64 N) {
  launch_map<false, Device<S>>(device_view(out), nullptr, device_view(a), device_view(b), N, Add{});
}

template <class S>
void residual_backward(S* da, S* db, const S* dout, i64 N) {
  launch_map<true, Device<S>>(device_view(da), device_view(db), device_view(dout), nullptr, N,
                   FanOut{});
}

#define SB_INSTANTIATE(S)                                               \
  template void gelu_forward<S>(S*, const S*, i64);                     \
  template void gelu_backward<S>(S*, const S*, const S*, i64);          \
  template void residual_forward<S>(S*, const S*, const S*, i64);       \
  template void residual_backward<S>(S*, S*, const S*, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
