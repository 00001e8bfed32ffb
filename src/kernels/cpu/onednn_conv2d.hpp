// SPDX-License-Identifier: Apache-2.0
// The convolutional network's 2-D convolution (NCHW, zero padding, square stride) on oneDNN
// primitives: fp32 where oneDNN's CPU ISA is at least AVX-512, bf16 operands with fp32
// accumulation where it has AMX-BF16 or AVX512-BF16 (core/cpu_isa.hpp). What StorageKernels
// calls on the cpu back-end in place of the own kernels (conv2d.cpp), which stay the fallback
// below those ISAs and the reference the tests hold this against; fp16 operands on the fp32
// primitives. Leaves out dilation, groups and the empty extents (the own kernels handle them).
#pragma once

#include <memory>
#include <string>

#include "kernels/storage_kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

class OnednnConv2d {
 public:
  // Reordered operands, oneDNN's results before they are added in, and scratchpads come from
  // `scratch`, released after each call.
  explicit OnednnConv2d(WideningScratch& scratch);
  ~OnednnConv2d();
  OnednnConv2d(const OnednnConv2d&) = delete;
  OnednnConv2d& operator=(const OnednnConv2d&) = delete;

  // Arguments and results as kernels.hpp's conv2d_forward / conv2d_backward: inp (N,C,H,W),
  // weight (OC,C,KH,KW), bias (OC) or nullptr -> out (N,OC,OH,OW); dout -> dinp += (nullptr:
  // skipped), dweight +=, dbias += (nullptr: skipped).
  void forward(float* out, const float* inp, const float* weight, const float* bias, i64 N, i64 C, i64 H, i64 W,
               i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);
  void backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);
  // bf16 operands, fp32 accumulation: out rounded to bf16 once; dinp summed in fp32 with its
  // old value and rounded once; dweight and dbias in fp32.
  void forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, i64 N, i64 C, i64 H, i64 W,
               i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);
  void backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp, const bf16* weight,
                i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);

  // fp16 operands on the fp32 primitives, each activation laid out and widened in one pass, the
  // results rounded to fp16 once (dinp summed in fp32 with its old value); false, with nothing
  // written, where a primitive wants a layout other than 16-channel blocks (the caller widens).
  bool forward(fp16* out, const fp16* inp, const fp16* weight, const fp16* bias, i64 N, i64 C, i64 H, i64 W,
               i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);
  bool backward(fp16* dinp, float* dweight, float* dbias, const fp16* dout, const fp16* inp, const fp16* weight,
                i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);

  // The oneDNN implementation of the last primitive run ("jit:avx512_core", "brg:avx512_core_amx",
  // ...), for logs and tests.
  const std::string& last_implementation() const;

  struct Primitives;  // the cached primitives (onednn_conv2d.cpp)

 private:
  std::unique_ptr<Primitives> primitives_;
  WideningScratch* scratch_;
};

}  // namespace sb::kernels::cpu
