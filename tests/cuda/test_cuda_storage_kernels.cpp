// SPDX-License-Identifier: Apache-2.0
// The cuda back-end's native 16-bit kernels (StorageKernels<S> on Backend::cuda: bf16 and fp16
// storage, fp32 accumulation) against the reference back-end's StorageKernels<S> on the host
// (widen, float reference kernel, round), on the same 16-bit inputs, with the per-precision
// tolerance table; sizes that are not multiples of a block, a warp or 8. One widened call (a
// convolutional kernel) checks the device scratch path. Leaves out timing
// (bench/bench_cuda_gpt_kernels.cu, bench/bench_cuda_gpt_step.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "kernels/storage_kernels.hpp"

namespace sb::kernels::testing {
namespace {

template <class S>
struct Storage;
template <>
struct Storage<bf16> {
  static constexpr DType dtype = DType::bf16;
  static bf16 round(float x) { return to_bf16(x); }
};
template <>
struct Storage<fp16> {
  static constexpr DType dtype = DType::f16;
  static fp16 round(float x) { return to_fp16(x); }
};

// n values N(0,1)·scale drawn for `seed`, stored in S (or float).
template <class S>
std::vector<S> random_values(i64 n, std::uint64_t seed, float scale = 1.0f) {
  const CounterRng rng(seed, 0);
  std::vector<S> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    const float x = scale * static_cast<float>(rng.normal(static_cast<std::uint64_t>(i)));
    if constexpr (std::is_same_v<S, float>)
      v[static_cast<std::size_t>(i)] = x;
    else
      v[static_cast<std::size_t>(i)] = Storage<S>::round(x);
  }
  return v;
}

std::vector<std::int32_t> random_indices(i64 n, i64 below, std::uint64_t seed) {
  const CounterRng rng(seed, 1);
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] =
        static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(below)));
  return v;
}

template <class T>
std::vector<float> widened(const std::vector<T>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = widen_value(v[i]);
  return out;
}

template <class T>
cuda::DeviceBuffer<T> on_device(const std::vector<T>& host) {
  return cuda::DeviceBuffer<T>(host);
}

template <class S>
class CudaStorageKernels : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    expected_ = std::make_unique<StorageKernels<S>>(Backend::reference, host_tracker_);
    actual_ = std::make_unique<StorageKernels<S>>(Backend::cuda, device_tracker_);
  }

  // The device tensor against the host one, widened, with the table's tolerance for op.
  template <class T>
  void expect_close(const std::string& op, Check check, const std::string& tensor, const std::vector<T>& expected,
                    const cuda::DeviceBuffer<T>& actual) {
    const Tolerance tol = tolerance_for(Storage<S>::dtype, op, check);
    report(compare(tensor, widened(actual.to_host()), widened(expected), tol),
           fmt::format("{} {} on cuda vs reference", storage_name<S>(), op));
  }

  // dinp += product on cuBLASLt's tensor-core path: its Hopper kernels round the product to
  // S before adding dinp's old values (beta 1), as the GEMM test records (test_cuda_gemm.cpp,
  // GemmTolerance; seen on an H200 on 2026-11-30 and again on 2026-12-04 at BT=256 C=64 OC=192:
  // bf16 -0.0078125 for -0.0042 where a product near 1 cancelled the old value). So the table's
  // rtol applies to |expected| + |product| there, the product being what the reference added.
  void expect_accumulated_close(const std::vector<S>& before, const std::vector<S>& expected,
                                const cuda::DeviceBuffer<S>& actual) {
    const std::vector<float> want = widened(expected), old = widened(before);
    std::vector<double> scale(want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      scale[i] = std::fabs(static_cast<double>(want[i])) + std::fabs(static_cast<double>(want[i]) - old[i]);
    report(compare("dinp", widened(actual.to_host()), want,
                   tolerance_for(Storage<S>::dtype, "matmul", Check::backend_backward), scale),
           fmt::format("{} matmul (cuBLASLt, beta 1) on cuda vs reference", storage_name<S>()));
  }

  MemoryTracker host_tracker_, device_tracker_;
  std::unique_ptr<StorageKernels<S>> expected_, actual_;
};

using StorageTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(CudaStorageKernels, StorageTypes);

constexpr i64 kB = 2, kT = 37, kC = 48, kNH = 3, kOC = 56, kV = 61;
constexpr i64 kBT = kB * kT;

TYPED_TEST(CudaStorageKernels, MatmulForwardAndBackward) {
  using S = TypeParam;
  struct Shape {
    i64 BT, C, OC;
  };
  // odd sizes (the cublasGemmEx path) and 16-byte rows (cuBLASLt, bias epilogue, fp32 dweight)
  const Shape shapes[] = {{kBT, kC - 1, kOC + 1}, {256, 64, 192}};
  for (int run = 0; run < 4; ++run) {
    const auto [BT, C, OC] = shapes[run / 2];
    const bool with_bias = run % 2 == 0;
    SCOPED_TRACE(fmt::format("BT={} C={} OC={} {}", BT, C, OC, with_bias ? "with bias" : "without bias"));
    const auto inp = random_values<S>(BT * C, 1), weight = random_values<S>(OC * C, 2, 0.2f);
    const auto bias = random_values<S>(OC, 3);
    std::vector<S> out(BT * OC);
    auto d_inp = on_device(inp), d_weight = on_device(weight), d_bias = on_device(bias), d_out = on_device(out);
    this->expected_->matmul_forward(out.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, BT,
                                    C, OC);
    this->actual_->matmul_forward(d_out.data(), d_inp.data(), d_weight.data(), with_bias ? d_bias.data() : nullptr,
                                  BT, C, OC);
    this->expect_close("matmul", Check::backend_forward, "out", out, d_out);

    const auto dout = random_values<S>(BT * OC, 4);
    auto dinp = random_values<S>(BT * C, 5);  // += onto values already there
    const std::vector<S> dinp_before = dinp;
    auto dweight = random_values<float>(OC * C, 6), dbias = random_values<float>(OC, 7);
    auto d_dout = on_device(dout), d_dinp = on_device(dinp);
    auto d_dweight = on_device(dweight), d_dbias = on_device(dbias);
    this->expected_->matmul_backward(dinp.data(), dweight.data(), with_bias ? dbias.data() : nullptr, dout.data(),
                                     inp.data(), weight.data(), BT, C, OC);
    this->actual_->matmul_backward(d_dinp.data(), d_dweight.data(), with_bias ? d_dbias.data() : nullptr,
                                   d_dout.data(), d_inp.data(), d_weight.data(), BT, C, OC);
    if (C % 8 != 0 || OC % 8 != 0)  // rows not 16-byte multiples: cublasGemmEx, the sum rounded once
      this->expect_close("matmul", Check::backend_backward, "dinp", dinp, d_dinp);
    else
      this->expect_accumulated_close(dinp_before, dinp, d_dinp);
    this->expect_close("matmul", Check::backend_backward, "dweight", dweight, d_dweight);
    this->expect_close("matmul", Check::backend_backward, "dbias", dbias, d_dbias);
  }
}

TYPED_TEST(CudaStorageKernels, EmbeddingForwardAndBackward) {
  using S = TypeParam;
  constexpr i64 V = 13;  // fewer rows than tokens: repeated tokens add into one row
  const auto tokens = random_indices(kBT, V, 8);
  const auto wte = random_values<S>(V * kC, 9), wpe = random_values<S>(kT * kC, 10);
  std::vector<S> out(kBT * kC);
  auto d_tokens = on_device(tokens);
  auto d_wte = on_device(wte), d_wpe = on_device(wpe), d_out = on_device(out);
  this->expected_->embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), kB, kT, kC);
  this->actual_->embedding_forward(d_out.data(), d_tokens.data(), d_wte.data(), d_wpe.data(), kB, kT, kC);
  this->expect_close("embedding", Check::backend_forward, "out", out, d_out);

  const auto dout = random_values<S>(kBT * kC, 11);
  auto dwte = random_values<float>(V * kC, 12), dwpe = random_values<float>(kT * kC, 13);
  auto d_dout = on_device(dout), d_dwte = on_device(dwte), d_dwpe = on_device(dwpe);
  this->expected_->embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), kB, kT, kC);
  this->actual_->embedding_backward(d_dwte.data(), d_dwpe.data(), d_dout.data(), d_tokens.data(), kB, kT, kC);
  this->expect_close("embedding", Check::backend_backward, "dwte", dwte, d_dwte);
  this->expect_close("embedding", Check::backend_backward, "dwpe", dwpe, d_dwpe);
}

TYPED_TEST(CudaStorageKernels, LayernormForwardAndBackward) {
  using S = TypeParam;
  // more than one pass of a row block's threads; 200: 8 values at a time, 203: one at a time
  for (const i64 C : {i64{200}, i64{203}}) {
    SCOPED_TRACE(fmt::format("C={}", C));
    const auto inp = random_values<S>(kBT * C, 14, 2.0f), weight = random_values<S>(C, 15);
    const auto bias = random_values<S>(C, 16);
    std::vector<S> out(kBT * C);
    std::vector<float> mean(kBT), rstd(kBT);
    auto d_inp = on_device(inp), d_weight = on_device(weight), d_bias = on_device(bias), d_out = on_device(out);
    auto d_mean = on_device(mean), d_rstd = on_device(rstd);
    this->expected_->layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                                       kBT, C);
    this->actual_->layernorm_forward(d_out.data(), d_mean.data(), d_rstd.data(), d_inp.data(), d_weight.data(),
                                     d_bias.data(), kBT, C);
    this->expect_close("layernorm", Check::backend_forward, "out", out, d_out);
    this->expect_close("layernorm", Check::backend_forward, "mean", mean, d_mean);
    this->expect_close("layernorm", Check::backend_forward, "rstd", rstd, d_rstd);

    const auto dout = random_values<S>(kBT * C, 17);
    auto dinp = random_values<S>(kBT * C, 18);
    auto dweight = random_values<float>(C, 19), dbias = random_values<float>(C, 20);
    auto d_dout = on_device(dout), d_dinp = on_device(dinp);
    auto d_dweight = on_device(dweight), d_dbias = on_device(dbias);
    d_mean.upload(mean);  // both backward calls read the reference's statistics
    d_rstd.upload(rstd);
    this->expected_->layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                                        weight.data(), mean.data(), rstd.data(), kBT, C);
    this->actual_->layernorm_backward(d_dinp.data(), d_dweight.data(), d_dbias.data(), d_dout.data(), d_inp.data(),
                                      d_weight.data(), d_mean.data(), d_rstd.data(), kBT, C);
    this->expect_close("layernorm", Check::backend_backward, "dinp", dinp, d_dinp);
    this->expect_close("layernorm", Check::backend_backward, "dweight", dweight, d_dweight);
    this->expect_close("layernorm", Check::backend_backward, "dbias", dbias, d_dbias);
  }
}

TYPED_TEST(CudaStorageKernels, AttentionForwardAndBackward) {
  using S = TypeParam;
  for (const i64 T : {kT, i64{40}}) {  // 40: the softmax rows 8 values at a time
    SCOPED_TRACE(fmt::format("T={}", T));
    const i64 BT = kB * T;
    const auto qkv = random_values<S>(BT * 3 * kC, 21);
    const i64 att_count = kB * kNH * T * T;
    std::vector<S> out(BT * kC), att(att_count);
    auto d_qkv = on_device(qkv), d_out = on_device(out), d_att = on_device(att);
    this->expected_->attention_forward(out.data(), att.data(), qkv.data(), kB, T, kC, kNH);
    this->actual_->attention_forward(d_out.data(), d_att.data(), d_qkv.data(), kB, T, kC, kNH);
    this->expect_close("attention", Check::backend_forward, "att", att, d_att);
    this->expect_close("attention", Check::backend_forward, "out", out, d_out);

    const auto dout = random_values<S>(BT * kC, 22);
    auto dqkv = random_values<S>(BT * 3 * kC, 23);
    auto d_dout = on_device(dout), d_dqkv = on_device(dqkv);
    d_att.upload(att);  // both backward calls read the reference's probabilities
    this->expected_->attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), kB, T, kC, kNH);
    this->actual_->attention_backward(d_dqkv.data(), d_dout.data(), d_qkv.data(), d_att.data(), kB, T, kC, kNH);
    this->expect_close("attention", Check::backend_backward, "dqkv", dqkv, d_dqkv);
  }
}

TYPED_TEST(CudaStorageKernels, GeluAndResidual) {
  using S = TypeParam;
  // 1001 values: vector loads over the first 1000, the tail one at a time; from element 1 on,
  // no 16-byte alignment, so the scalar path runs whole.
  constexpr i64 N = 1001;
  for (const i64 offset : {0, 1}) {
    SCOPED_TRACE(offset == 0 ? "aligned" : "unaligned");
    const i64 n = N - offset;
    const auto x = random_values<S>(N, 24, 2.0f), y = random_values<S>(N, 25);
    std::vector<S> out(N), da = random_values<S>(N, 26), db = random_values<S>(N, 27);
    auto d_x = on_device(x), d_y = on_device(y), d_out = on_device(out), d_da = on_device(da), d_db = on_device(db);
    this->expected_->gelu_forward(out.data() + offset, x.data() + offset, n);
    this->actual_->gelu_forward(d_out.data() + offset, d_x.data() + offset, n);
    this->expect_close("gelu", Check::backend_forward, "out", out, d_out);
    this->expected_->gelu_backward(da.data() + offset, x.data() + offset, y.data() + offset, n);
    this->actual_->gelu_backward(d_da.data() + offset, d_x.data() + offset, d_y.data() + offset, n);
    this->expect_close("gelu", Check::backend_backward, "dinp", da, d_da);
    this->expected_->residual_forward(out.data() + offset, x.data() + offset, y.data() + offset, n);
    this->actual_->residual_forward(d_out.data() + offset, d_x.data() + offset, d_y.data() + offset, n);
    this->expect_close("residual", Check::backend_forward, "out", out, d_out);
    this->expected_->residual_backward(da.data() + offset, db.data() + offset, y.data() + offset, n);
    this->actual_->residual_backward(d_da.data() + offset, d_db.data() + offset, d_y.data() + offset, n);
    this->expect_close("residual", Check::backend_backward, "da", da, d_da);
    this->expect_close("residual", Check::backend_backward, "db", db, d_db);
  }
}

TYPED_TEST(CudaStorageKernels, CrossentropyForwardAndBackward) {
  using S = TypeParam;
  for (const i64 V : {kV, i64{64}}) {  // 64: the 8-value backward path
    SCOPED_TRACE(fmt::format("V={}", V));
    const auto logits = random_values<S>(kBT * V, 28, 3.0f);
    const auto targets = random_indices(kBT, V, 29);
    std::vector<S> probs(kBT * V);
    std::vector<float> losses(kBT);
    auto d_logits = on_device(logits), d_probs = on_device(probs);
    auto d_targets = on_device(targets);
    auto d_losses = on_device(losses);
    this->expected_->crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), kBT, V);
    this->actual_->crossentropy_forward(d_losses.data(), d_probs.data(), d_logits.data(), d_targets.data(), kBT, V);
    this->expect_close("crossentropy", Check::backend_forward, "probs", probs, d_probs);
    this->expect_close("crossentropy", Check::backend_forward, "losses", losses, d_losses);

    auto dlogits = random_values<S>(kBT * V, 30);
    const auto dlosses = random_values<float>(kBT, 31);
    auto d_dlogits = on_device(dlogits), d_dlosses = on_device(dlosses);
    d_probs.upload(probs);
    this->expected_->crossentropy_backward(dlogits.data(), probs.data(), targets.data(), dlosses.data(), kBT, V);
    this->actual_->crossentropy_backward(d_dlogits.data(), d_probs.data(), d_targets.data(), d_dlosses.data(), kBT,
                                         V);
    this->expect_close("crossentropy", Check::backend_backward, "dlogits", dlogits, d_dlogits);
  }
}

// A call without a native kernel widens into device scratch (the cuda conversion kernels) and
// runs the cuda float kernel.
TYPED_TEST(CudaStorageKernels, WidenedCallsRunOnTheDevice) {
  using S = TypeParam;
  constexpr i64 N = 2, C = 3, HW = 25;
  const auto inp = random_values<S>(N * C * HW, 32);
  std::vector<S> out(N * C);
  auto d_inp = on_device(inp), d_out = on_device(out);
  this->expected_->global_avgpool_forward(out.data(), inp.data(), N, C, HW);
  this->actual_->global_avgpool_forward(d_out.data(), d_inp.data(), N, C, HW);
  this->expect_close("global_avgpool", Check::backend_forward, "out", out, d_out);
  EXPECT_GT(this->device_tracker_.usage().of(MemoryCategory::workspace), 0) << "the widened operands' scratch";

  // The tensor-parallel embedding: its tokens are read on the device, never on the host.
  constexpr i64 V = 7, vocab_begin = 5;
  const auto tokens = random_indices(kBT, 20, 33);
  const auto wte = random_values<S>(V * kC, 34), wpe = random_values<S>(kT * kC, 35);
  std::vector<S> emb(kBT * kC);
  auto d_tokens = on_device(tokens);
  auto d_wte = on_device(wte), d_wpe = on_device(wpe), d_emb = on_device(emb);
  this->expected_->embedding_shard_forward(emb.data(), tokens.data(), wte.data(), wpe.data(), vocab_begin, V, kB,
                                           kT, kC);
  this->actual_->embedding_shard_forward(d_emb.data(), d_tokens.data(), d_wte.data(), d_wpe.data(), vocab_begin, V,
                                         kB, kT, kC);
  this->expect_close("embedding", Check::backend_forward, "shard out", emb, d_emb);
}

}  // namespace
}  // namespace sb::kernels::testing
