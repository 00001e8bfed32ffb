// SPDX-License-Identifier: Apache-2.0
// The cuda back-end's native 16-bit kernels behind NativeStorageKernels<S> (storage_kernels.hpp):
// templates over S = bf16, fp16, instantiated for both in storage_*.cu; signatures and
// semantics those of StorageKernels' members of the same names (device pointers, the default
// context's stream). Leaves out the convolutional network's kernels (widened, not native).
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace sb::kernels::cuda::native {

// inp (BT,C), weight (OC,C), bias (OC) or nullptr -> out (BT,OC)
template <class S>
void matmul_forward(S* out, const S* inp, const S* weight, const S* bias, i64 BT, i64 C, i64 OC);
// dout (BT,OC) -> dinp (BT,C) +=, dweight (OC,C) += (fp32), dbias (OC) += (fp32, nullptr: skipped)
template <class S>
void matmul_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                     i64 BT, i64 C, i64 OC);
// tokens (B,T), wte (V,C), wpe (maxT,C) -> out (B,T,C)
template <class S>
void embedding_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe, i64 B, i64 T, i64 C);
// dout (B,T,C) -> dwte (V,C) +=, dwpe (maxT,C) += (fp32)
template <class S>
void embedding_backward(float* dwte, float* dwpe, const S* dout, const std::int32_t* tokens, i64 B, i64 T,
                        i64 C);
// inp (N,C), weight, bias (C) -> out (N,C), mean (N), rstd (N) (fp32)
template <class S>
void layernorm_forward(S* out, float* mean, float* rstd, const S* inp, const S* weight, const S* bias, i64 N,
                       i64 C);
// dout (N,C) -> dinp (N,C) +=, dweight (C) +=, dbias (C) += (fp32)
template <class S>
void layernorm_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                        const float* mean, const float* rstd, i64 N, i64 C);
// qkv (B,T,3C) -> out (B,T,C), att (B,NH,T,T)
template <class S>
void attention_forward(S* out, S* att, const S* qkv, i64 B, i64 T, i64 C, i64 NH);
// dout (B,T,C), qkv (B,T,3C), att (B,NH,T,T) -> dqkv (B,T,3C) +=
template <class S>
void attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B, i64 T, i64 C, i64 NH);
template <class S>
void gelu_forward(S* out, const S* inp, i64 N);
template <class S>
void gelu_backward(S* dinp, const S* inp, const S* dout, i64 N);
template <class S>
void residual_forward(S* out, const S* a, const S* b, i64 N);
template <class S>
void residual_backward(S* da, S* db, const S* dout, i64 N);
// logits (BT,V), targets (BT) -> losses (BT) (fp32), probs (BT,V)
template <class S>
void crossentropy_forward(float* losses, S* probs, const S* logits, const std::int32_t* targets, i64 BT, i64 V);
// probs (BT,V), dlosses (BT) (fp32) -> dlogits (BT,V) +=
template <class S>
void crossentropy_backward(S* dlogits, const S* probs, const std::int32_t* targets, const float* dlosses, i64 BT,
                           i64 V);

}  // namespace sb::kernels::cuda::native
