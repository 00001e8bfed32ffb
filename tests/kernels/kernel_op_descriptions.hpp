// SPDX-License-Identifier: Apache-2.0
// One description per differentiable kernel pair: tensors, forward/backward calls, awkward
// sizes and finite-difference sizes. Leaves out adamw and norms (no backward).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "op_test_harness.hpp"

namespace sb::kernels::testing {

// Sizes are chosen to be multiples of no block or vector width (4, 8, 16, 32, 64); T = 1 and
// N = 1 are the edge cases.

struct MatmulOp {
  static constexpr const char* name = "matmul";
  i64 BT, C, OC;
  bool with_bias = true;

  std::string label() const { return fmt::format("BT={} C={} OC={} bias={}", BT, C, OC, with_bias); }
  std::vector<TensorSpec> tensors() const {
    std::vector<TensorSpec> specs{{"inp", BT * C, Role::input},
                                  {"weight", OC * C, Role::input},
                                  {"out", BT * OC, Role::output}};
    if (with_bias) specs.push_back({"bias", OC, Role::input});
    return specs;
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.matmul_forward(s["out"], s["inp"], s["weight"], with_bias ? s["bias"] : nullptr, BT, C, OC);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.matmul_backward(s.grad("inp"), s.grad("weight"), with_bias ? s.grad("bias") : nullptr,
                      s.grad("out"), s["inp"], s["weight"], BT, C, OC);
  }
  static std::vector<MatmulOp> backend_cases() {
    return {{3 * 37, 45, 53}, {3 * 37, 45, 53, false}, {1, 45, 53}, {1, 1, 1}, {67, 200, 3}};
  }
  static MatmulOp gradient_case() { return {5, 7, 6}; }
};

struct EmbeddingOp {
  static constexpr const char* name = "embedding";
  i64 B, T, C, V, max_T;  // max_T > T: rows of wpe past T must get no gradient

  std::string label() const { return fmt::format("B={} T={} C={} V={}", B, T, C, V); }
  std::vector<TensorSpec> tensors() const {
    return {{"wte", V * C, Role::input}, {"wpe", max_T * C, Role::input}, {"out", B * T * C, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {{"tokens", B * T, V}}; }
  template <class K, class T_>
  void forward(const K& k, OpState<T_>& s) const {
    k.embedding_forward(s["out"], s.index("tokens"), s["wte"], s["wpe"], B, T, C);
  }
  template <class K, class T_>
  void backward(const K& k, OpState<T_>& s) const {
    k.embedding_backward(s.grad("wte"), s.grad("wpe"), s.grad("out"), s.index("tokens"), B, T, C);
  }
  // V = 5 with 111 tokens: every token repeats, so backward accumulates many rows into one.
  static std::vector<EmbeddingOp> backend_cases() {
    return {{3, 37, 45, 67, 40}, {3, 37, 45, 5, 37}, {1, 1, 45, 67, 1}};
  }
  static EmbeddingOp gradient_case() { return {2, 5, 6, 4, 7}; }
};

struct LayernormOp {
  static constexpr const char* name = "layernorm";
  i64 N, C;

  std::string label() const { return fmt::format("N={} C={}", N, C); }
  std::vector<TensorSpec> tensors() const {
    return {{"inp", N * C, Role::input},  {"weight", C, Role::input}, {"bias", C, Role::input},
            {"out", N * C, Role::output}, {"mean", N, Role::saved},   {"rstd", N, Role::saved}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.layernorm_forward(s["out"], s["mean"], s["rstd"], s["inp"], s["weight"], s["bias"], N, C);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.layernorm_backward(s.grad("inp"), s.grad("weight"), s.grad("bias"), s.grad("out"), s["inp"],
                         s["weight"], s["mean"], s["rstd"], N, C);
  }
  static std::vector<LayernormOp> backend_cases() { return {{3 * 37, 45}, {1, 45}, {37, 1}, {5, 300}}; }
  static LayernormOp gradient_case() { return {5, 7}; }
};

struct AttentionOp {
  static constexpr const char* name = "attention";
  i64 B, T, C, NH;

  std::string label() const { return fmt::format("B={} T={} C={} NH={}", B, T, C, NH); }
  std::vector<TensorSpec> tensors() const {
    return {{"qkv", B * T * 3 * C, Role::input},
            {"out", B * T * C, Role::output},
            {"att", B * NH * T * T, Role::saved}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T_>
  void forward(const K& k, OpState<T_>& s) const {
    k.attention_forward(s["out"], s["att"], s["qkv"], B, T, C, NH);
  }
  template <class K, class T_>
  void backward(const K& k, OpState<T_>& s) const {
    k.attention_backward(s.grad("qkv"), s.grad("out"), s["qkv"], s["att"], B, T, C, NH);
  }
  // T = 70 spans three row blocks of the cpu kernel, the last one partial.
  static std::vector<AttentionOp> backend_cases() {
    return {{3, 37, 45, 3}, {1, 1, 45, 3}, {2, 70, 12, 4}, {1, 5, 7, 1}};
  }
  static AttentionOp gradient_case() { return {2, 5, 6, 2}; }
};

struct GeluOp {
  static constexpr const char* name = "gelu";
  i64 N;

  std::string label() const { return fmt::format("N={}", N); }
  // Scale 3 reaches the saturated tails, where tanh is +-1 and the derivative vanishes.
  std::vector<TensorSpec> tensors() const {
    return {{"inp", N, Role::input, 3.0}, {"out", N, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.gelu_forward(s["out"], s["inp"], N);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.gelu_backward(s.grad("inp"), s["inp"], s.grad("out"), N);
  }
  static std::vector<GeluOp> backend_cases() { return {{3 * 37 * 4 * 45}, {1}, {45}}; }
  static GeluOp gradient_case() { return {37}; }
};

struct ResidualOp {
  static constexpr const char* name = "residual";
  i64 N;

  std::string label() const { return fmt::format("N={}", N); }
  std::vector<TensorSpec> tensors() const {
    return {{"a", N, Role::input}, {"b", N, Role::input}, {"out", N, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.residual_forward(s["out"], s["a"], s["b"], N);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.residual_backward(s.grad("a"), s.grad("b"), s.grad("out"), N);
  }
  static std::vector<ResidualOp> backend_cases() { return {{3 * 37 * 4 * 45}, {1}}; }
  static ResidualOp gradient_case() { return {11}; }
};

struct CrossentropyOp {
  static constexpr const char* name = "crossentropy";
  i64 BT, V;

  std::string label() const { return fmt::format("BT={} V={}", BT, V); }
  // Scale 4 makes softmax rows peaked, so the max subtraction matters.
  std::vector<TensorSpec> tensors() const {
    return {{"logits", BT * V, Role::input, 4.0},
            {"losses", BT, Role::output},
            {"probs", BT * V, Role::saved}};
  }
  std::vector<IndexSpec> indices() const { return {{"targets", BT, V}}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.crossentropy_forward(s["losses"], s["probs"], s["logits"], s.index("targets"), BT, V);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.crossentropy_backward(s.grad("logits"), s["probs"], s.index("targets"), s.grad("losses"), BT, V);
  }
  static std::vector<CrossentropyOp> backend_cases() { return {{3 * 37, 67}, {1, 67}, {5, 1}, {7, 300}}; }
  static CrossentropyOp gradient_case() { return {5, 7}; }
};

// One rank's vocabulary shard of the tensor-parallel embedding: rows [vocab_begin, vocab_begin + V)
// of a vocabulary of V_total; tokens outside the shard contribute no row (and get no gradient).
struct EmbeddingShardOp {
  static constexpr const char* name = "embedding_shard";
  i64 B, T, C, V, V_total, vocab_begin, max_T;

  std::string label() const {
    return fmt::format("B={} T={} C={} rows [{}, {}) of {}", B, T, C, vocab_begin, vocab_begin + V, V_total);
  }
  std::vector<TensorSpec> tensors() const {
    return {{"wte", V * C, Role::input}, {"wpe", max_T * C, Role::input}, {"out", B * T * C, Role::output}};
  }
  std::vector<IndexSpec> indices() const { return {{"tokens", B * T, V_total}}; }
  template <class K, class T_>
  void forward(const K& k, OpState<T_>& s) const {
    k.embedding_shard_forward(s["out"], s.index("tokens"), s["wte"], s["wpe"], vocab_begin, V, B, T, C);
  }
  template <class K, class T_>
  void backward(const K& k, OpState<T_>& s) const {
    k.embedding_shard_backward(s.grad("wte"), s.grad("wpe"), s.grad("out"), s.index("tokens"), vocab_begin, V, B,
                               T, C);
  }
  static std::vector<EmbeddingShardOp> backend_cases() {
    return {{3, 37, 45, 23, 67, 22, 40}, {3, 37, 45, 5, 13, 8, 37}, {1, 1, 45, 67, 67, 0, 1}};
  }
  static EmbeddingShardOp gradient_case() { return {2, 5, 6, 3, 7, 2, 7}; }
};

// The vocabulary-parallel cross-entropy of one shard as if it were the only one (the all-reduces
// between its three forward kernels are the identity): log Σ exp over the shard minus the target
// logit when the target is in the shard. Targets outside it make the loss log Σ exp alone, whose
// gradient the same backward gives (probs without the one-hot).
struct CrossentropyShardOp {
  static constexpr const char* name = "crossentropy_shard";
  i64 BT, V, V_total, vocab_begin;

  std::string label() const { return fmt::format("BT={} rows [{}, {}) of {}", BT, vocab_begin, vocab_begin + V, V_total); }
  std::vector<TensorSpec> tensors() const {
    return {{"logits", BT * V, Role::input, 4.0}, {"losses", BT, Role::output}, {"probs", BT * V, Role::saved},
            {"row_max", BT, Role::saved}, {"sumexp", BT, Role::saved}, {"target_logit", BT, Role::saved}};
  }
  std::vector<IndexSpec> indices() const { return {{"targets", BT, V_total}}; }
  template <class K, class T>
  void forward(const K& k, OpState<T>& s) const {
    k.crossentropy_shard_max(s["row_max"], s["logits"], BT, V);
    k.crossentropy_shard_partials(s["sumexp"], s["target_logit"], s["logits"], s["row_max"], s.index("targets"),
                                  vocab_begin, BT, V);
    k.crossentropy_shard_finish(s["losses"], s["probs"], s["logits"], s["row_max"], s["sumexp"], s["target_logit"],
                                BT, V);
  }
  template <class K, class T>
  void backward(const K& k, OpState<T>& s) const {
    k.crossentropy_shard_backward(s.grad("logits"), s["probs"], s.index("targets"), s.grad("losses"), vocab_begin,
                                  BT, V);
  }
  static std::vector<CrossentropyShardOp> backend_cases() {
    return {{3 * 37, 67, 257, 64}, {1, 67, 67, 0}, {7, 300, 1000, 700}};
  }
  static CrossentropyShardOp gradient_case() { return {5, 7, 13, 3}; }
};

}  // namespace sb::kernels::testing
