// SPDX-License-Identifier: Apache-2.0
// Every compute kernel of scalebench, declared once. Each backend implements the same
// signatures in its own tree: reference/ (naive loops, templated on float and double, the
// ground truth), cpu/ (Kokkos OpenMP + OpenBLAS, float), cuda/ (CUDA + cuBLAS, float, device
// pointers). Leaves out
// autograd: backward kernels ACCUMULATE (+=) into gradient buffers, llm.c style, so the
// caller zeroes gradients once per step. One exception, marked "=" below:
// batchnorm2d_backward_apply OVERWRITES dinp, whose caller owns a fresh buffer for it (a
// convolution's output gradient), so that no per-step zeroing pass is needed.
#pragma once

#include <cstdint>
#include <string_view>

namespace sb {
struct bf16;  // precision/bf16.hpp
struct fp16;  // precision/fp16.hpp
enum class Device : int;  // core/tensor.hpp
}  // namespace sb

namespace sb::kernels {

using i64 = std::int64_t;

// ---- work estimates, beside each declaration -------------------------------------------
// kernel_work(shape arguments, eb): FLOPs, bytes read and written (eb bytes per element of the
// caller's activations and weights: 4 fp32, 2 bf16/fp16; statistics and parameter gradients
// are fp32), and the figure the call's time grows with (its FLOPs for the GEMM-like kernels,
// the elements of its largest tensor otherwise). The single count read by the cost model,
// calibrate, the benchmarks and models/*_flops.hpp. Element-wise FLOPs are rough operation counts.
struct KernelWork {
  double flops = 0, bytes = 0, size = 0;
};
inline double as_double(i64 x) { return static_cast<double>(x); }

// ---- signatures (shapes beside every argument) ------------------------------------------
// Each SB_DECLARE_<KERNEL>(S, G) spells one kernel for two value types: S, the storage of
// activations, weights and activation gradients; G, the parameter gradients, the optimizer's
// state and the statistics (LayerNorm and BatchNorm mean and rstd, running statistics, per-token
// losses, the cross-entropy's row statistics). The reference instantiates (T, T) for float and
// double, the float back-ends (float, float), and mixed precision's 16-bit storage (bf16 or
// fp16, float): fp32 main gradients and statistics beside 16-bit tensors, as Megatron-LM keeps
// them (SB_FOR_EACH_STORAGE_KERNEL below; storage_kernels.hpp).
// inp (BT,C), weight (OC,C), bias (OC) or nullptr -> out (BT,OC)
#define SB_DECLARE_MATMUL_FORWARD(S, G) \
  void matmul_forward(S* out, const S* inp, const S* weight, const S* bias, i64 BT, i64 C, i64 OC)
inline KernelWork matmul_forward_work(i64 BT, i64 C, i64 OC, int eb) {
  const double bt = as_double(BT), c = as_double(C), oc = as_double(OC), flops = 2.0 * bt * c * oc;
  return {flops, eb * (bt * c + oc * c + oc + bt * oc), flops};
}
// dout (BT,OC) -> dinp (BT,C) +=, dweight (OC,C) +=, dbias (OC) += (nullptr: skipped)
#define SB_DECLARE_MATMUL_BACKWARD(S, G)                                                     \
  void matmul_backward(S* dinp, G* dweight, G* dbias, const S* dout, const S* inp,       \
                       const S* weight, i64 BT, i64 C, i64 OC)
inline KernelWork matmul_backward_work(i64 BT, i64 C, i64 OC, int eb) {  // dinp and dweight
  const double bt = as_double(BT), c = as_double(C), oc = as_double(OC), flops = 4.0 * bt * c * oc;
  return {flops, eb * (bt * oc + 3.0 * bt * c + oc * c) + 4.0 * (2.0 * oc * c + oc), flops};
}
// tokens (B,T) in [0,V), wte (V,C), wpe (maxT>=T,C) -> out (B,T,C) = wte[token] + wpe[t]
#define SB_DECLARE_EMBEDDING_FORWARD(S, G)                                                   \
  void embedding_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe, \
                         i64 B, i64 T_, i64 C)
inline KernelWork embedding_forward_work(i64 B, i64 T_, i64 C, int eb) {
  const double e = as_double(B) * as_double(T_) * as_double(C);
  return {e, eb * 3.0 * e, e};
}
// dout (B,T,C) -> dwte (V,C) +=, dwpe (maxT,C) +=
#define SB_DECLARE_EMBEDDING_BACKWARD(S, G)                                                  \
  void embedding_backward(G* dwte, G* dwpe, const S* dout, const std::int32_t* tokens,   \
                          i64 B, i64 T_, i64 C)
inline KernelWork embedding_backward_work(i64 B, i64 T_, i64 C, int eb) {
  const double e = as_double(B) * as_double(T_) * as_double(C);
  return {2.0 * e, eb * e + 4.0 * 4.0 * e, e};
}
// inp (N,C), weight (C), bias (C) -> out (N,C), mean (N), rstd (N); eps = 1e-5
#define SB_DECLARE_LAYERNORM_FORWARD(S, G)                                                   \
  void layernorm_forward(S* out, G* mean, G* rstd, const S* inp, const S* weight,        \
                         const S* bias, i64 N, i64 C)
inline KernelWork layernorm_forward_work(i64 N, i64 C, int eb) {
  const double e = as_double(N) * as_double(C);
  return {8.0 * e, eb * 2.0 * e + 8.0 * as_double(N), e};
}
// dout (N,C) -> dinp (N,C) +=, dweight (C) +=, dbias (C) +=
#define SB_DECLARE_LAYERNORM_BACKWARD(S, G)                                                  \
  void layernorm_backward(S* dinp, G* dweight, G* dbias, const S* dout, const S* inp,    \
                          const S* weight, const G* mean, const G* rstd, i64 N, i64 C)
inline KernelWork layernorm_backward_work(i64 N, i64 C, int eb) {
  const double e = as_double(N) * as_double(C);
  return {14.0 * e, eb * 4.0 * e + 8.0 * as_double(N), e};
}
// qkv (B,T,3C) laid out [q | k | v], each C = NH heads of C/NH -> out (B,T,C),
// att (B,NH,T,T) causal softmax probabilities (upper triangle zero), kept for backward
#define SB_DECLARE_ATTENTION_FORWARD(S, G) \
  void attention_forward(S* out, S* att, const S* qkv, i64 B, i64 T_, i64 C, i64 NH)
// FLOPs: the two matrix products (scores Q·Kᵀ and probabilities·V), 4·B·T²·C, the causal mask
// not discounted (models/gpt/gpt_flops.hpp counts the same)
// `products` (B,T,T)×(T,C) matrix products and `activations` (B,T,C) tensors moved, with att once
inline KernelWork attention_work(i64 B, i64 T_, i64 C, i64 NH, int eb, double products, double activations) {
  const double b = as_double(B), t = as_double(T_), flops = 2.0 * products * b * t * t * as_double(C);
  return {flops, eb * (activations * b * t * as_double(C) + b * as_double(NH) * t * t), flops};
}
inline KernelWork attention_forward_work(i64 B, i64 T_, i64 C, i64 NH, int eb) {
  return attention_work(B, T_, C, NH, eb, 2, 4);  // reads qkv (3C), writes out (C)
}
// dout (B,T,C), qkv (B,T,3C), att (B,NH,T,T) -> dqkv (B,T,3C) +=
#define SB_DECLARE_ATTENTION_BACKWARD(S, G)                                                  \
  void attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B,     \
                          i64 T_, i64 C, i64 NH)
// FLOPs: twice the forward's (dQ, dK from dS; dV, dP from dout); reads qkv, att, dout, += dqkv
inline KernelWork attention_backward_work(i64 B, i64 T_, i64 C, i64 NH, int eb) {
  return attention_work(B, T_, C, NH, eb, 4, 10);
}
// inp (N) -> out (N) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
#define SB_DECLARE_GELU_FORWARD(S, G) void gelu_forward(S* out, const S* inp, i64 N)
inline KernelWork gelu_forward_work(i64 N, int eb) {
  return {8.0 * as_double(N), eb * 2.0 * as_double(N), as_double(N)};
}
// inp (N), dout (N) -> dinp (N) +=
#define SB_DECLARE_GELU_BACKWARD(S, G) void gelu_backward(S* dinp, const S* inp, const S* dout, i64 N)
inline KernelWork gelu_backward_work(i64 N, int eb) {
  return {16.0 * as_double(N), eb * 4.0 * as_double(N), as_double(N)};
}
// a (N), b (N) -> out (N) = a + b
#define SB_DECLARE_RESIDUAL_FORWARD(S, G) void residual_forward(S* out, const S* a, const S* b, i64 N)
inline KernelWork residual_forward_work(i64 N, int eb) { return {as_double(N), eb * 3.0 * as_double(N), as_double(N)}; }
// dout (N) -> da (N) +=, db (N) +=
#define SB_DECLARE_RESIDUAL_BACKWARD(S, G) \
  void residual_backward(S* da, S* db, const S* dout, i64 N)
inline KernelWork residual_backward_work(i64 N, int eb) {
  return {2.0 * as_double(N), eb * 5.0 * as_double(N), as_double(N)};
}
// logits (BT,V), targets (BT) in [0,V) -> probs (BT,V) softmax, losses (BT) = -log probs[target]
#define SB_DECLARE_CROSSENTROPY_FORWARD(S, G)                                                \
  void crossentropy_forward(G* losses, S* probs, const S* logits,                        \
                            const std::int32_t* targets, i64 BT, i64 V)
inline KernelWork crossentropy_forward_work(i64 BT, i64 V, int eb) {
  const double e = as_double(BT) * as_double(V);
  return {4.0 * e, eb * 2.0 * e + 8.0 * as_double(BT), e};
}
// probs (BT,V), dlosses (BT) -> dlogits (BT,V) += (probs - onehot(target)) * dlosses
#define SB_DECLARE_CROSSENTROPY_BACKWARD(S, G)                                               \
  void crossentropy_backward(S* dlogits, const S* probs, const std::int32_t* targets,    \
                             const G* dlosses, i64 BT, i64 V)
inline KernelWork crossentropy_backward_work(i64 BT, i64 V, int eb) {
  const double e = as_double(BT) * as_double(V);
  return {2.0 * e, eb * 3.0 * e + 8.0 * as_double(BT), e};
}
// ---- vocabulary-parallel embedding and cross-entropy (Megatron tensor parallelism): this rank
// holds vocabulary rows [vocab_begin, vocab_begin + V) of wte and the logits of those rows; the
// caller all-reduces the per-row partials between the calls. Tokens and targets are global ids.
// tokens (B,T) in [0, total vocab), wte (V,C) rows vocab_begin.., wpe (maxT>=T,C) or nullptr ->
// out (B,T,C) = (token in shard ? wte[token - vocab_begin] : 0) + (wpe ? wpe[t] : 0)   (OVERWRITTEN)
#define SB_DECLARE_EMBEDDING_SHARD_FORWARD(S, G)                                                  \
  void embedding_shard_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe, \
                               i64 vocab_begin, i64 V, i64 B, i64 T_, i64 C)
// shape arguments (V, B, T, C): vocab_begin is where, not how much
inline KernelWork embedding_shard_forward_work(i64 /*V*/, i64 B, i64 T_, i64 C, int eb) {
  return embedding_forward_work(B, T_, C, eb);
}
// dout (B,T,C) -> dwte (V,C) += rows of the tokens in the shard, dwpe (maxT,C) += (nullptr: skipped)
#define SB_DECLARE_EMBEDDING_SHARD_BACKWARD(S, G)                                                   \
  void embedding_shard_backward(G* dwte, G* dwpe, const S* dout, const std::int32_t* tokens,     \
                                i64 vocab_begin, i64 V, i64 B, i64 T_, i64 C)
inline KernelWork embedding_shard_backward_work(i64 /*V*/, i64 B, i64 T_, i64 C, int eb) {
  return embedding_backward_work(B, T_, C, eb);
}
// logits (BT,V) -> row_max (BT) = max over this shard's V logits   (OVERWRITTEN)
#define SB_DECLARE_CROSSENTROPY_SHARD_MAX(S, G) \
  void crossentropy_shard_max(G* row_max, const S* logits, i64 BT, i64 V)
inline KernelWork crossentropy_shard_max_work(i64 BT, i64 V, int eb) {
  const double e = as_double(BT) * as_double(V);
  return {e, eb * e + 4.0 * as_double(BT), e};
}
// logits (BT,V), row_max (BT) the maximum over every shard, targets (BT) global ->
// sumexp (BT) = sum exp(logit - row_max) over this shard (summed in double),
// target_logit (BT) = logits[target - vocab_begin] when the target is in the shard, else 0
// (OVERWRITTEN)
#define SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS(S, G)                                                \
  void crossentropy_shard_partials(G* sumexp, G* target_logit, const S* logits, const G* row_max, \
                                   const std::int32_t* targets, i64 vocab_begin, i64 BT, i64 V)
// shape arguments (BT, V)
inline KernelWork crossentropy_shard_partials_work(i64 BT, i64 V, int eb) {
  const double e = as_double(BT) * as_double(V);
  return {3.0 * e, eb * e + 16.0 * as_double(BT), e};
}
// row_max, sumexp, target_logit (BT) reduced over every shard -> probs (BT,V) = this shard's
// softmax, losses (BT) = log(sumexp) - (target_logit - row_max)   (OVERWRITTEN)
#define SB_DECLARE_CROSSENTROPY_SHARD_FINISH(S, G)                                                  \
  void crossentropy_shard_finish(G* losses, S* probs, const S* logits, const G* row_max,        \
                                 const G* sumexp, const G* target_logit, i64 BT, i64 V)
inline KernelWork crossentropy_shard_finish_work(i64 BT, i64 V, int eb) {
  const double e = as_double(BT) * as_double(V);
  return {3.0 * e, eb * 2.0 * e + 16.0 * as_double(BT), e};
}
// probs (BT,V), dlosses (BT) -> dlogits (BT,V) += (probs - onehot(target - vocab_begin)) dlosses
#define SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD(S, G)                                                \
  void crossentropy_shard_backward(S* dlogits, const S* probs, const std::int32_t* targets,     \
                                   const G* dlosses, i64 vocab_begin, i64 BT, i64 V)
// shape arguments (BT, V)
inline KernelWork crossentropy_shard_backward_work(i64 BT, i64 V, int eb) {
  return crossentropy_backward_work(BT, V, eb);
}
// PyTorch AdamW, one tensor: params (N), grads (N), m (N), v (N) updated in place; step >= 1.
// p -= lr*wd*p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr * (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps)
#define SB_DECLARE_ADAMW_UPDATE(S, G)                                                        \
  void adamw_update(G* params, const G* grads, G* m, G* v, i64 N, double lr, double beta1, \
                    double beta2, double eps, double weight_decay, i64 step)
inline KernelWork adamw_update_work(i64 N) { return {12.0 * as_double(N), 4.0 * 7.0 * as_double(N), as_double(N)}; }
// x (N) -> sum of x^2, accumulated in double
#define SB_DECLARE_SQUARED_NORM(S, G) double squared_norm(const G* x, i64 N)
inline KernelWork squared_norm_work(i64 N) { return {2.0 * as_double(N), 4.0 * as_double(N), as_double(N)}; }
// x (N) *= factor
#define SB_DECLARE_SCALE_INPLACE(S, G) void scale_inplace(G* x, i64 N, double factor)
inline KernelWork scale_inplace_work(i64 N) { return {as_double(N), 8.0 * as_double(N), as_double(N)}; }

// ---- convolutional network kernels (NCHW, float) ------------------------------------------
// inp (N,C,H,W), weight (OC,C,KH,KW), bias (OC) or nullptr -> out (N,OC,OH,OW),
// OH = (H + 2·pad - KH) / stride + 1 (likewise OW); zero padding
#define SB_DECLARE_CONV2D_FORWARD(S, G)                                                      \
  void conv2d_forward(S* out, const S* inp, const S* weight, const S* bias, i64 N, i64 C, \
                      i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad)
inline i64 conv2d_output_size(i64 H, i64 K, i64 stride, i64 pad) { return (H + 2 * pad - K) / stride + 1; }
// each of the N·OC·OH·OW outputs is a C·KH·KW dot product
inline KernelWork conv2d_forward_work(i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad,
                                      int eb) {
  const double outputs = as_double(N) * as_double(OC) * as_double(conv2d_output_size(H, KH, stride, pad)) *
                         as_double(conv2d_output_size(W, KW, stride, pad));
  const double flops = 2.0 * outputs * as_double(C) * as_double(KH) * as_double(KW);
  return {flops,
          eb * (as_double(N) * as_double(C) * as_double(H) * as_double(W) +
                as_double(OC) * as_double(C) * as_double(KH) * as_double(KW) + outputs),
          flops};
}
// dout (N,OC,OH,OW) -> dinp (N,C,H,W) += (nullptr: skipped, e.g. the first layer),
// dweight (OC,C,KH,KW) +=, dbias (OC) += (nullptr: skipped)
#define SB_DECLARE_CONV2D_BACKWARD(S, G)                                                     \
  void conv2d_backward(S* dinp, G* dweight, G* dbias, const S* dout, const S* inp,       \
                       const S* weight, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, \
                       i64 stride, i64 pad)
// with_input_gradient false: dinp nullptr, the weight gradient alone (a forward's FLOPs)
inline KernelWork conv2d_backward_work(i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad,
                                       bool with_input_gradient, int eb) {
  const KernelWork f = conv2d_forward_work(N, C, H, W, OC, KH, KW, stride, pad, eb);
  const double passes = with_input_gradient ? 2.0 : 1.0;
  return {passes * f.flops, passes * f.bytes, passes * f.flops};
}
// Training-mode BatchNorm2d (PyTorch): inp (N,C,HW), weight/bias (C) -> out (N,C,HW), batch
// mean (C) and rstd = 1/sqrt(biased var + eps) (C) kept for backward; running_mean/var (C)
// updated in place: r = (1 - momentum)·r + momentum·batch stat, with the UNBIASED variance
#define SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN(S, G)                                            \
  void batchnorm2d_forward_train(S* out, G* mean, G* rstd, G* running_mean, G* running_var, \
                                 const S* inp, const S* weight, const S* bias, i64 N, i64 C,  \
                                 i64 HW, double momentum, double eps)
// the compulsory traffic: inp read, out written (the statistics pass reads inp again)
inline KernelWork batchnorm2d_forward_train_work(i64 N, i64 C, i64 HW, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {6.0 * e, eb * 2.0 * e, e};
}
// Eval-mode BatchNorm2d with the running statistics -> out (N,C,HW)
#define SB_DECLARE_BATCHNORM2D_FORWARD_EVAL(S, G)                                             \
  void batchnorm2d_forward_eval(S* out, const S* inp, const S* weight, const S* bias,       \
                                const G* running_mean, const G* running_var, i64 N, i64 C,  \
                                i64 HW, double eps)
// dout (N,C,HW) -> dinp (N,C,HW) +=, dweight (C) +=, dbias (C) += (training-mode statistics)
#define SB_DECLARE_BATCHNORM2D_BACKWARD(S, G)                                                 \
  void batchnorm2d_backward(S* dinp, G* dweight, G* dbias, const S* dout, const S* inp,     \
                            const S* weight, const G* mean, const G* rstd, i64 N, i64 C, i64 HW)
// the compulsory traffic: inp and dout read, dinp read and written
inline KernelWork batchnorm2d_backward_work(i64 N, i64 C, i64 HW, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {8.0 * e, eb * 4.0 * e, e};
}
// ---- BatchNorm2d split at its reductions, so that the per-channel sums can be all-reduced
// across ranks in between (synchronised BatchNorm); unsynchronised, count = N·HW. Sums are
// double: [first (C) | second (C)]. norm = (x - mean) rstd.
// inp (N,C,HW) -> sums (2,C) = [Σx | Σx²] over N·HW (overwritten)
#define SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(S, G) \
  void batchnorm2d_channel_sums(double* sums, const S* inp, i64 N, i64 C, i64 HW)
inline KernelWork batchnorm2d_channel_sums_work(i64 N, i64 C, i64 HW, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {2.0 * e, eb * e + 16.0 * as_double(C), e};
}
// sums (2,C) of `count` values per channel -> mean (C), rstd (C) = 1/sqrt(biased var + eps);
// running_mean/var (C) r = (1 - momentum)·r + momentum·stat, with the UNBIASED variance
#define SB_DECLARE_BATCHNORM2D_STATISTICS(S, G)                                               \
  void batchnorm2d_statistics(G* mean, G* rstd, G* running_mean, G* running_var,            \
                              const double* sums, double count, i64 C, double momentum,     \
                              double eps)
inline KernelWork batchnorm2d_statistics_work(i64 C) { return {8.0 * as_double(C), 40.0 * as_double(C), as_double(C)}; }
// inp (N,C,HW), mean/rstd/weight/bias (C), residual (N,C,HW) or nullptr ->
// out (N,C,HW) = norm·weight + bias (+ residual), then max(·, 0) when relu
#define SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(S, G)                                             \
  void batchnorm2d_forward_apply(S* out, const S* inp, const G* mean, const G* rstd,         \
                                 const S* weight, const S* bias, const S* residual, bool relu, \
                                 i64 N, i64 C, i64 HW)
// shape arguments (N, C, HW, residual ? 1 : 0, relu ? 1 : 0)
inline KernelWork batchnorm2d_forward_apply_work(i64 N, i64 C, i64 HW, bool residual, bool relu, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {(2.0 + (residual ? 1.0 : 0.0) + (relu ? 1.0 : 0.0)) * e, eb * (2.0 + (residual ? 1.0 : 0.0)) * e, e};
}
// dy = dout·[relu_out > 0] (relu_out: the forward_apply output when it had relu, else
// nullptr and dy = dout); dout, relu_out, inp (N,C,HW) -> sums (2,C) = [Σdy | Σdy·norm]
// over this call's N·HW (overwritten); dweight (C) += Σdy·norm, dbias (C) += Σdy
#define SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(S, G)                                             \
  void batchnorm2d_backward_sums(double* sums, G* dweight, G* dbias, const S* dout,          \
                                 const S* relu_out, const S* inp, const G* mean, const G* rstd, \
                                 i64 N, i64 C, i64 HW)
inline KernelWork batchnorm2d_backward_sums_work(i64 N, i64 C, i64 HW, bool relu, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {4.0 * e, eb * (2.0 + (relu ? 1.0 : 0.0)) * e + 32.0 * as_double(C), e};
}
// sums (2,C) of backward_sums over `count` values (all ranks' when synchronised) ->
// dinp (N,C,HW) = weight·rstd·(dy - Σdy/count - norm·Σdy·norm/count)   (OVERWRITTEN)
#define SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(S, G)                                            \
  void batchnorm2d_backward_apply(S* dinp, const S* dout, const S* relu_out, const S* inp,   \
                                  const S* weight, const G* mean, const G* rstd,             \
                                  const double* sums, double count, i64 N, i64 C, i64 HW)
inline KernelWork batchnorm2d_backward_apply_work(i64 N, i64 C, i64 HW, bool relu, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {6.0 * e, eb * (3.0 + (relu ? 1.0 : 0.0)) * e, e};
}
// inp (N) -> out (N) = max(x, 0)
#define SB_DECLARE_RELU_FORWARD(S, G) void relu_forward(S* out, const S* inp, i64 N)
inline KernelWork relu_forward_work(i64 N, int eb) { return {as_double(N), eb * 2.0 * as_double(N), as_double(N)}; }
// out (N) the forward's output, dout (N) -> dinp (N) += dout · [out > 0]
#define SB_DECLARE_RELU_BACKWARD(S, G) void relu_backward(S* dinp, const S* out, const S* dout, i64 N)
inline KernelWork relu_backward_work(i64 N, int eb) { return {as_double(N), eb * 4.0 * as_double(N), as_double(N)}; }
// inp (N,C,HW) -> out (N,C) mean over HW
#define SB_DECLARE_GLOBAL_AVGPOOL_FORWARD(S, G) \
  void global_avgpool_forward(S* out, const S* inp, i64 N, i64 C, i64 HW)
inline KernelWork global_avgpool_forward_work(i64 N, i64 C, i64 HW, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {e, eb * (e + as_double(N) * as_double(C)), e};
}
// dout (N,C) -> dinp (N,C,HW) += dout / HW
#define SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD(S, G) \
  void global_avgpool_backward(S* dinp, const S* dout, i64 N, i64 C, i64 HW)
inline KernelWork global_avgpool_backward_work(i64 N, i64 C, i64 HW, int eb) {
  const double e = as_double(N) * as_double(C) * as_double(HW);
  return {e, eb * (2.0 * e + as_double(N) * as_double(C)), e};
}
// PyTorch SGD (dampening 0, no Nesterov), one tensor: g = grad + wd·p;
// buf = g at step 1, else momentum·buf + g; p -= lr·buf. params, grads, buf (N); step >= 1
#define SB_DECLARE_SGD_UPDATE(S, G)                                                           \
  void sgd_update(G* params, const G* grads, G* momentum_buffer, i64 N, double lr,          \
                  double momentum, double weight_decay, i64 step)
inline KernelWork sgd_update_work(i64 N) { return {4.0 * as_double(N), 4.0 * 5.0 * as_double(N), as_double(N)}; }

// ---- 16-bit storage conversions (precision/bf16.hpp, precision/fp16.hpp): the same in every
// precision, so the macros take no T; float -> 16-bit rounds to nearest, ties to even; 16-bit ->
// float is exact. inp (N) -> out (N)   (OVERWRITTEN; out and inp do not overlap)
#define SB_DECLARE_CONVERT_F32_TO_BF16 void convert_f32_to_bf16(bf16* out, const float* inp, i64 N)
#define SB_DECLARE_CONVERT_BF16_TO_F32 void convert_bf16_to_f32(float* out, const bf16* inp, i64 N)
#define SB_DECLARE_CONVERT_F32_TO_FP16 void convert_f32_to_fp16(fp16* out, const float* inp, i64 N)
#define SB_DECLARE_CONVERT_FP16_TO_F32 void convert_fp16_to_f32(float* out, const fp16* inp, i64 N)
// any of the four: N values read in one width, written in the other
inline KernelWork convert_work(i64 N) { return {0.0, 6.0 * as_double(N), as_double(N)}; }

// ---- int8 inference (post-training quantisation, src/compress/): symmetric, zero point 0; the
// same in every precision, so the macros take no T. Integer sums are exact: every backend must
// give the same bits. Rounding is nearbyint (ties to even); dequantisation is one fma.
// inp (N), scale > 0 -> out (N) = clamp(nearbyint(inp / scale), -127, 127)   (OVERWRITTEN)
#define SB_DECLARE_QUANTIZE_INT8 \
  void quantize_int8(std::int8_t* out, const float* inp, float scale, i64 N)
// inp (BT,C) int8 quantised with inp_scale, weight (OC,C) int8 quantised per output channel
// with weight_scale (OC), bias (OC) float or nullptr -> out (BT,OC)
//   = fma(float(Σ_c inp·weight as int32), inp_scale·weight_scale[o], bias[o] or 0) (OVERWRITTEN)
#define SB_DECLARE_INT8_MATMUL_FORWARD                                                       \
  void int8_matmul_forward(float* out, const std::int8_t* inp, const std::int8_t* weight,     \
                           float inp_scale, const float* weight_scale, const float* bias, i64 BT, \
                           i64 C, i64 OC)
// The int8 convolution over channels-last images (NHWC, so that a pixel's channels are one
// contiguous dot product, the layout int8 convolution kernels run in): inp (N,H,W,C) int8
// quantised with inp_scale, weight (OC,C,KH,KW) int8 quantised per output channel with
// weight_scale (OC), bias (OC) float or nullptr, zero padding `pad` on every side, the same
// stride both ways -> out (N,OH,OW,OC), OH = (H + 2·pad - KH)/stride + 1 and OW alike,
//   = fma(float(Σ_{c,kh,kw} inp·weight as int32), inp_scale·weight_scale[o], bias[o] or 0)
// (OVERWRITTEN): int8_matmul_forward's dequantisation, so both give the same bits.
#define SB_DECLARE_INT8_CONV2D_FORWARD                                                             \
  void int8_conv2d_forward(float* out, const std::int8_t* inp, const std::int8_t* weight, float inp_scale, \
                           const float* weight_scale, const float* bias, i64 N, i64 C, i64 H, i64 W,      \
                           i64 OC, i64 KH, i64 KW, i64 stride, i64 pad)

// X-macros over the kernels, in groups: X(name, DECLARE_MACRO). Every kernel is in exactly one
// group; SB_FOR_EACH_KERNEL is all of them, SB_FOR_EACH_STORAGE_KERNEL those a model calls with
// S storage (storage_kernels.hpp's StorageKernels<S> members, each declared from its SB_DECLARE_
// macro with (S, float)).

// The GPT's kernels, which a back-end may implement natively for 16-bit S (the cuda tree:
// 16-bit operands on tensor cores, float math in registers; cuda::native below).
#define SB_FOR_EACH_NATIVE_STORAGE_KERNEL(X)                 \
  X(matmul_forward, SB_DECLARE_MATMUL_FORWARD)               \
  X(matmul_backward, SB_DECLARE_MATMUL_BACKWARD)             \
  X(embedding_forward, SB_DECLARE_EMBEDDING_FORWARD)         \
  X(embedding_backward, SB_DECLARE_EMBEDDING_BACKWARD)       \
  X(layernorm_forward, SB_DECLARE_LAYERNORM_FORWARD)         \
  X(layernorm_backward, SB_DECLARE_LAYERNORM_BACKWARD)       \
  X(attention_forward, SB_DECLARE_ATTENTION_FORWARD)         \
  X(attention_backward, SB_DECLARE_ATTENTION_BACKWARD)       \
  X(gelu_forward, SB_DECLARE_GELU_FORWARD)                   \
  X(gelu_backward, SB_DECLARE_GELU_BACKWARD)                 \
  X(residual_forward, SB_DECLARE_RESIDUAL_FORWARD)           \
  X(residual_backward, SB_DECLARE_RESIDUAL_BACKWARD)         \
  X(crossentropy_forward, SB_DECLARE_CROSSENTROPY_FORWARD)   \
  X(crossentropy_backward, SB_DECLARE_CROSSENTROPY_BACKWARD)

// The GPT's vocabulary-parallel embedding and cross-entropy (tensor parallelism).
#define SB_FOR_EACH_VOCAB_PARALLEL_KERNEL(X)                             \
  X(embedding_shard_forward, SB_DECLARE_EMBEDDING_SHARD_FORWARD)         \
  X(embedding_shard_backward, SB_DECLARE_EMBEDDING_SHARD_BACKWARD)       \
  X(crossentropy_shard_max, SB_DECLARE_CROSSENTROPY_SHARD_MAX)           \
  X(crossentropy_shard_partials, SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS) \
  X(crossentropy_shard_finish, SB_DECLARE_CROSSENTROPY_SHARD_FINISH)     \
  X(crossentropy_shard_backward, SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD)

// The convolutional network's kernels that the ResNet calls with S storage.
#define SB_FOR_EACH_CNN_STORAGE_KERNEL(X)                                \
  X(conv2d_forward, SB_DECLARE_CONV2D_FORWARD)                           \
  X(conv2d_backward, SB_DECLARE_CONV2D_BACKWARD)                         \
  X(batchnorm2d_channel_sums, SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS)       \
  X(batchnorm2d_statistics, SB_DECLARE_BATCHNORM2D_STATISTICS)           \
  X(batchnorm2d_forward_apply, SB_DECLARE_BATCHNORM2D_FORWARD_APPLY)     \
  X(batchnorm2d_backward_sums, SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS)     \
  X(batchnorm2d_backward_apply, SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY)   \
  X(relu_backward, SB_DECLARE_RELU_BACKWARD)                             \
  X(global_avgpool_forward, SB_DECLARE_GLOBAL_AVGPOOL_FORWARD)           \
  X(global_avgpool_backward, SB_DECLARE_GLOBAL_AVGPOOL_BACKWARD)

// The unsplit BatchNorm2d and the forward ReLU (float only: the models call the split kernels
// above), and the optimizer's kernels (fp32 main parameters and gradients).
#define SB_FOR_EACH_FLOAT_ONLY_KERNEL(X)                                 \
  X(batchnorm2d_forward_train, SB_DECLARE_BATCHNORM2D_FORWARD_TRAIN)     \
  X(batchnorm2d_forward_eval, SB_DECLARE_BATCHNORM2D_FORWARD_EVAL)       \
  X(batchnorm2d_backward, SB_DECLARE_BATCHNORM2D_BACKWARD)               \
  X(relu_forward, SB_DECLARE_RELU_FORWARD)                               \
  X(adamw_update, SB_DECLARE_ADAMW_UPDATE)                               \
  X(squared_norm, SB_DECLARE_SQUARED_NORM)                               \
  X(scale_inplace, SB_DECLARE_SCALE_INPLACE)                             \
  X(sgd_update, SB_DECLARE_SGD_UPDATE)

#define SB_FOR_EACH_STORAGE_KERNEL(X) \
  SB_FOR_EACH_NATIVE_STORAGE_KERNEL(X) SB_FOR_EACH_VOCAB_PARALLEL_KERNEL(X) SB_FOR_EACH_CNN_STORAGE_KERNEL(X)
#define SB_FOR_EACH_KERNEL(X) SB_FOR_EACH_STORAGE_KERNEL(X) SB_FOR_EACH_FLOAT_ONLY_KERNEL(X)

// X-macro over the kernels without a precision parameter: X(name, DECLARE), DECLARE a plain
// declaration (no T). The reference implements them as plain functions, not templates.
#define SB_FOR_EACH_CONVERSION_KERNEL(X)                   \
  X(convert_f32_to_bf16, SB_DECLARE_CONVERT_F32_TO_BF16)   \
  X(convert_bf16_to_f32, SB_DECLARE_CONVERT_BF16_TO_F32)   \
  X(convert_f32_to_fp16, SB_DECLARE_CONVERT_F32_TO_FP16)   \
  X(convert_fp16_to_f32, SB_DECLARE_CONVERT_FP16_TO_F32)

// X-macro over the int8 inference kernels: X(name, DECLARE), DECLARE a plain declaration.
#define SB_FOR_EACH_INT8_KERNEL(X)             \
  X(quantize_int8, SB_DECLARE_QUANTIZE_INT8)   \
  X(int8_matmul_forward, SB_DECLARE_INT8_MATMUL_FORWARD) \
  X(int8_conv2d_forward, SB_DECLARE_INT8_CONV2D_FORWARD)

// ---- backends ---------------------------------------------------------------------------
namespace reference {  // templates, instantiated for float and double in reference/*.cpp
#define SB_DECLARE_REFERENCE(name, DECLARE) template <class T> DECLARE(T, T);
SB_FOR_EACH_KERNEL(SB_DECLARE_REFERENCE)
#undef SB_DECLARE_REFERENCE
#define SB_DECLARE_PLAIN(name, DECLARE) DECLARE;
SB_FOR_EACH_CONVERSION_KERNEL(SB_DECLARE_PLAIN)
SB_FOR_EACH_INT8_KERNEL(SB_DECLARE_PLAIN)
#undef SB_DECLARE_PLAIN
}  // namespace reference

namespace cpu {
#define SB_DECLARE_CPU(name, DECLARE) DECLARE(float, float);
SB_FOR_EACH_KERNEL(SB_DECLARE_CPU)
#undef SB_DECLARE_CPU
#define SB_DECLARE_PLAIN(name, DECLARE) DECLARE;
SB_FOR_EACH_CONVERSION_KERNEL(SB_DECLARE_PLAIN)
SB_FOR_EACH_INT8_KERNEL(SB_DECLARE_PLAIN)
#undef SB_DECLARE_PLAIN
}  // namespace cpu

// Every pointer is a device pointer; kernels run on the calling thread's default CUDA context
// (cuda/cuda_context.hpp) in stream order, except squared_norm, which returns to the host.
// Compiled only where CUDA is found (SB_HAVE_CUDA); declared everywhere.
namespace cuda {
#define SB_DECLARE_CUDA(name, DECLARE) DECLARE(float, float);
SB_FOR_EACH_KERNEL(SB_DECLARE_CUDA)
#undef SB_DECLARE_CUDA
#define SB_DECLARE_PLAIN(name, DECLARE) DECLARE;
SB_FOR_EACH_CONVERSION_KERNEL(SB_DECLARE_PLAIN)
SB_FOR_EACH_INT8_KERNEL(SB_DECLARE_PLAIN)
#undef SB_DECLARE_PLAIN
// The native 16-bit kernels (S = bf16, fp16; fp32 parameter gradients and statistics), defined
// in the cuda tree's storage_*.cu; semantics as above.
namespace native {
#define SB_DECLARE_NATIVE(name, DECLARE) template <class S> DECLARE(S, float);
SB_FOR_EACH_NATIVE_STORAGE_KERNEL(SB_DECLARE_NATIVE)
#undef SB_DECLARE_NATIVE
}  // namespace native
}  // namespace cuda

// ---- runtime dispatch (precision and backend are runtime choices) -----------------------
enum class Backend : int { reference, cpu, cuda };
std::string_view to_string(Backend backend);
// "reference" | "cpu" | "cuda"; throws UserError on anything else.
Backend parse_backend(std::string_view name);
// Where a backend's kernels read and write: host memory (reference, cpu) or the GPU (cuda).
Device memory_device(Backend backend);

// One function pointer per kernel, float precision, then the conversion and the int8 kernels;
// initialised in that order:
// {SB_FOR_EACH_KERNEL(...) SB_FOR_EACH_CONVERSION_KERNEL(...) SB_FOR_EACH_INT8_KERNEL(...)}.
struct KernelTable {
#define SB_TABLE_MEMBER(name, DECLARE) decltype(&cpu::name) name;
  SB_FOR_EACH_KERNEL(SB_TABLE_MEMBER)
  SB_FOR_EACH_CONVERSION_KERNEL(SB_TABLE_MEMBER)
  SB_FOR_EACH_INT8_KERNEL(SB_TABLE_MEMBER)
#undef SB_TABLE_MEMBER
};

// The float kernels of a backend. Backend::cuda throws "not compiled: cuda" in a build
// without CUDA.
const KernelTable& kernels_for(Backend backend);

}  // namespace sb::kernels
