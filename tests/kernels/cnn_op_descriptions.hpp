// SPDX-License-Identifier: Apache-2.0
// One description per differentiable convolutional-network kernel pair (conv2d, training-mode
// BatchNorm2d, ReLU, global average pool). Leaves out eval-mode BatchNorm and SGD (no backward).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "op_test_harness.hpp"

namespace sb::kernels::testing {

// Sizes are multiples of no block or vector width, H != W throughout, so a swapped H and W or a
// wrong stride shows; N = 1, C = 1 and HW = 1 are the edge cases. Unlike the GPT ops these
// have several gradient cases: each geometry (padding, stride, 1x1) has its own index maths.

struct Conv2dOp {
  static constexpr const char* name = "conv2d";
  i64 N, C, H, W, OC, KH, KW, stride, pad;
  bool with_bias = true;
  bool with_dinp = true;  // false: dinp = nullptr, as for a network's first layer

  i64 OH() const { return (H + 2 * pad - KH) / stride + 1; }
  i64 OW() const { return (W + 2 * pad - KW) / stride + 1; }
  std::string label() const {
    return fmt::format("N={} C={} H={} W={} OC={} K={}x{} stride={} pad={} bias={} dinp={}", N, C,
                       H, W, OC, KH, KW, stride, pad, with_bias, with_dinp);
  }
  std::vector<TensorSpec> tensors() const {
    std::vector<TensorSpec> specs{{"inp", N * C * H * W, Role::input},
                                  {"weight", OC * C * KH * KW, Role::input},
                                  {"out", N * OC * OH() * OW(), Role::output}};
    if (with_bias) specs.push_back({"bias", OC, Role::input});
    return specs;
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.conv2d_forward(s["out"], s["inp"], s["weight"], with_bias ? s["bias"] : nullptr, N, C, H, W,
                     OC, KH, KW, stride, pad);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.conv2d_backward(with_dinp ? s.grad("inp") : nullptr, s.grad("weight"),
                      with_bias ? s.grad("bias") : nullptr, s.grad("out"), s["inp"], s["weight"],
                      N, C, H, W, OC, KH, KW, stride, pad);
  }
  // The cpu kernel has three im2col paths: "same" width (stride 1, OW == W: one shifted copy
  // per tap), the general one, and none (1x1, stride 1, no padding); and three for dinp: a
  // transposed convolution (stride 1, square kernel, pad < K, OC <= C), col2im (the rest), or
  // direct (1x1). 5x5 taps on a 1-row input fall wholly in the padding; 2x2 with pad 2 is
  // stride 1 but not transposable; N = 37 spreads over 16 weight-gradient groups of 2-3 images.
  // On AVX2 CPUs every convolution but the 1x1 ones takes the shifted-plane path instead (the
  // strided ones on phase planes: stride 2 with odd extents, 3x2 stride 2, 5x3 stride 3), its
  // dinp as a transposed convolution where the im2col path has one, else col2im; the im2col
  // paths are checked on their own as well (Conv2dKernels.Im2colPathsMatchTheReference). The
  // last seven cases are for the shifted path: output channels and grid widths that are
  // multiples of neither 4 nor 24, padding 0, 1 and 2, one input channel without dinp, the
  // untransposable 2x2 pad 2 (col2im dinp), and C·KH·KW = 20 taps, not a multiple of the weight
  // gradient's 3-tap tiles; N = 37 and 19 give groups of several images side by side.
  static std::vector<Conv2dOp> backend_cases() {
    return {{3, 5, 11, 9, 7, 3, 3, 1, 1},          {3, 7, 11, 9, 5, 3, 3, 1, 1},
            {3, 5, 11, 9, 7, 3, 3, 2, 1},          {3, 5, 11, 9, 7, 1, 1, 2, 0, false},
            {3, 5, 11, 9, 7, 1, 1, 1, 0},          {1, 1, 13, 7, 5, 3, 3, 1, 1, true, false},
            {2, 3, 10, 12, 4, 3, 2, 2, 2},         {2, 3, 8, 7, 4, 3, 2, 1, 1},
            {2, 4, 6, 9, 3, 5, 5, 1, 2},           {1, 3, 1, 6, 2, 5, 5, 1, 2},
            {2, 3, 4, 5, 3, 2, 2, 1, 2},           {37, 6, 9, 10, 5, 3, 3, 1, 1},
            {2, 3, 5, 6, 3, 5, 3, 3, 1},          {3, 5, 13, 14, 7, 3, 3, 1, 1},
            {2, 3, 12, 17, 6, 5, 5, 1, 2},         {2, 4, 12, 16, 5, 3, 3, 1, 0},
            {2, 1, 14, 12, 5, 3, 3, 1, 1, true, false}, {2, 3, 14, 13, 4, 2, 2, 1, 2},
            {19, 9, 7, 8, 10, 3, 3, 1, 1, false}, {2, 5, 12, 13, 6, 2, 2, 1, 1}};
  }
  static std::vector<Conv2dOp> gradient_cases() {
    return {{2, 3, 5, 4, 4, 3, 3, 1, 1}, {2, 3, 6, 5, 4, 3, 3, 2, 1}, {2, 3, 5, 4, 4, 1, 1, 2, 0},
            {1, 2, 4, 5, 3, 2, 3, 1, 0, false}, {1, 2, 3, 5, 2, 5, 5, 1, 2}};
  }
};

struct Batchnorm2dOp {
  static constexpr const char* name = "batchnorm2d";
  i64 N, C, HW;
  double momentum = 0.1, eps = 1e-5;

  std::string label() const { return fmt::format("N={} C={} HW={}", N, C, HW); }
  // running_mean/var are saved tensors: compared after forward, not differentiated (they do
  // not enter the training-mode output).
  std::vector<TensorSpec> tensors() const {
    return {{"inp", N * C * HW, Role::input},     {"weight", C, Role::input},
            {"bias", C, Role::input},             {"out", N * C * HW, Role::output},
            {"mean", C, Role::saved},             {"rstd", C, Role::saved},
            {"running_mean", C, Role::saved},     {"running_var", C, Role::saved}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.batchnorm2d_forward_train(s["out"], s["mean"], s["rstd"], s["running_mean"],
                                s["running_var"], s["inp"], s["weight"], s["bias"], N, C, HW,
                                momentum, eps);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.batchnorm2d_backward(s.grad("inp"), s.grad("weight"), s.grad("bias"), s.grad("out"),
                           s["inp"], s["weight"], s["mean"], s["rstd"], N, C, HW);
  }
  // {1, 7, 2}: two values per channel, the fewest training mode allows; {37, 3, 1}: HW = 1.
  static std::vector<Batchnorm2dOp> backend_cases() {
    return {{3, 5, 11 * 9}, {1, 7, 2}, {37, 3, 1}, {5, 17, 7 * 7}};
  }
  static std::vector<Batchnorm2dOp> gradient_cases() { return {{3, 2, 5}, {1, 3, 2}}; }
};

// Training-mode BatchNorm2d from its split kernels (channel sums, statistics, apply; backward
// sums, apply) as the model calls them unsynchronised, optionally with the fused ReLU and
// residual add: out = relu(bn(inp) + residual). The residual's gradient is the ReLU backward,
// as the model forms it, so the op is a whole differentiable function.
struct Batchnorm2dSplitOp {
  static constexpr const char* name = "batchnorm2d_split";
  i64 N, C, HW;
  bool relu = false, with_residual = false;
  double momentum = 0.1, eps = 1e-5;

  std::string label() const {
    return fmt::format("N={} C={} HW={} relu={} residual={}", N, C, HW, relu, with_residual);
  }
  std::vector<TensorSpec> tensors() const {
    std::vector<TensorSpec> specs{
        {"inp", N * C * HW, Role::input},  {"weight", C, Role::input},
        {"bias", C, Role::input},          {"out", N * C * HW, Role::output},
        {"mean", C, Role::saved},          {"rstd", C, Role::saved},
        {"running_mean", C, Role::saved},  {"running_var", C, Role::saved}};
    if (with_residual) specs.push_back({"residual", N * C * HW, Role::input});
    return specs;
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    std::vector<double> sums(static_cast<std::size_t>(2 * C));
    k.batchnorm2d_channel_sums(sums.data(), s["inp"], N, C, HW);
    k.batchnorm2d_statistics(s["mean"], s["rstd"], s["running_mean"], s["running_var"],
                             sums.data(), static_cast<double>(N * HW), C, momentum, eps);
    k.batchnorm2d_forward_apply(s["out"], s["inp"], s["mean"], s["rstd"], s["weight"], s["bias"],
                                with_residual ? s["residual"] : nullptr, relu, N, C, HW);
  }
  // backward_apply overwrites dinp; the harness's non-zero starting dinp checks that too.
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    std::vector<double> sums(static_cast<std::size_t>(2 * C));
    const T* relu_out = relu ? s["out"] : nullptr;
    k.batchnorm2d_backward_sums(sums.data(), s.grad("weight"), s.grad("bias"), s.grad("out"),
                                relu_out, s["inp"], s["mean"], s["rstd"], N, C, HW);
    k.batchnorm2d_backward_apply(s.grad("inp"), s.grad("out"), relu_out, s["inp"], s["weight"],
                                 s["mean"], s["rstd"], sums.data(), static_cast<double>(N * HW),
                                 N, C, HW);
    if (with_residual) {
      if (relu) {
        k.relu_backward(s.grad("residual"), s["out"], s.grad("out"), N * C * HW);
      } else {
        for (i64 i = 0; i < N * C * HW; ++i) s.grad("residual")[i] += s.grad("out")[i];
      }
    }
  }
  static std::vector<Batchnorm2dSplitOp> backend_cases() {
    return {{3, 5, 11 * 9},         {1, 7, 2},          {37, 3, 1},
            {5, 17, 7 * 7},         {3, 5, 11 * 9, true}, {5, 17, 7 * 7, true, true},
            {2, 3, 13, false, true}};
  }
  static std::vector<Batchnorm2dSplitOp> gradient_cases() {
    return {{3, 2, 5}, {1, 3, 2}, {3, 2, 5, true}, {2, 3, 4, true, true}};
  }
};

struct ReluOp {
  static constexpr const char* name = "relu";
  i64 N;

  std::string label() const { return fmt::format("N={}", N); }
  std::vector<TensorSpec> tensors() const {
    return {{"inp", N, Role::input}, {"out", N, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.relu_forward(s["out"], s["inp"], N);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.relu_backward(s.grad("inp"), s["out"], s.grad("out"), N);
  }
  static std::vector<ReluOp> backend_cases() { return {{3 * 8192 + 45}, {1}, {45}}; }
  static std::vector<ReluOp> gradient_cases() { return {{37}}; }
};

struct GlobalAvgpoolOp {
  static constexpr const char* name = "global_avgpool";
  i64 N, C, HW;

  std::string label() const { return fmt::format("N={} C={} HW={}", N, C, HW); }
  std::vector<TensorSpec> tensors() const {
    return {{"inp", N * C * HW, Role::input}, {"out", N * C, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.global_avgpool_forward(s["out"], s["inp"], N, C, HW);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.global_avgpool_backward(s.grad("inp"), s.grad("out"), N, C, HW);
  }
  static std::vector<GlobalAvgpoolOp> backend_cases() {
    return {{3, 5, 11 * 9}, {1, 1, 1}, {37, 7, 7 * 7}};
  }
  static std::vector<GlobalAvgpoolOp> gradient_cases() { return {{2, 3, 5}}; }
};

}  // namespace sb::kernels::testing
