// SPDX-License-Identifier: Apache-2.0
// Where a GPT training step's time goes on the GPU: every cuda kernel the GPT model calls,
// at gpt2-124m's shapes (models/gpt/gpt_config.cpp; B=8, T=1024 by default), timed alone
// with CUDA events and multiplied by its calls per step; a table sorted by milliseconds per step, with achieved
// TFLOP/s and GB/s of the work kernels.hpp estimates beside each declaration. Leaves out the
// memsets and host copies between kernels (bench_cuda_gpt_step times the whole step).
//
//   bench_cuda_gpt_kernels [--batch B] [--seq-len T] [--summary FILE]
// Without a visible GPU it prints SKIP and exits 0.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/convert.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/kernel_table.hpp"
#include "models/gpt/gpt_config.hpp"

namespace {

using sb::kernels::i64;
namespace cu = sb::kernels::cuda;

struct Row {
  std::string name;
  int calls_per_step;
  double flops, bytes;  // per call, as kernels.hpp estimates them
  double seconds = 0;   // per call
};

double seconds_per_call(const std::function<void()>& call) {
  cudaStream_t stream = cu::default_context().stream();
  call();  // warm-up: handles, plans
  cudaEvent_t start, stop;
  SB_CUDA_CHECK(cudaEventCreate(&start));
  SB_CUDA_CHECK(cudaEventCreate(&stop));
  constexpr int kRepeats = 5;
  SB_CUDA_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < kRepeats; ++i) call();
  SB_CUDA_CHECK(cudaEventRecord(stop, stream));
  SB_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  SB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3 / kRepeats;
}

cu::DeviceBuffer<float> filled(i64 n, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  cu::DeviceBuffer<float> buffer(n);
  cu::fill_uniform(cu::default_context(), sb::DType::f32, buffer.data(), n, seed, low, high);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  i64 B = 8, T = 1024;
  std::string summary_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--batch" && i + 1 < argc) B = std::stoll(argv[++i]);
    else if (arg == "--seq-len" && i + 1 < argc) T = std::stoll(argv[++i]);
    else if (arg == "--summary" && i + 1 < argc) summary_path = argv[++i];
    else {
      std::fprintf(stderr, "bench_cuda_gpt_kernels: unknown argument '%s' (known: --batch B, --seq-len T, --summary FILE)\n",
                   arg.c_str());
      return 2;
    }
  }
  auto write_summary = [&](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    if (!summary_path.empty()) std::ofstream(summary_path) << text;
  };
  if (cu::visible_device_count() == 0) {
    write_summary("SKIP: bench_cuda_gpt_kernels: no CUDA device visible, nothing measured\n");
    return 0;
  }
  try {
    const sb::gpt::GptConfig model = sb::gpt::gpt_config_by_name("gpt2-124m");
    const i64 L = model.layers, C = model.channels, NH = model.heads, V = model.vocab, maxT = model.max_seq_len;
    const i64 P = sb::gpt::gpt_parameter_count(model);  // what the optimizer kernels sweep
    const i64 BT = B * T, F = 4 * C;
    const sb::kernels::KernelTable& k = cu::cuda_kernel_table();
    // One block's worth of tensors (reused by every row), and the head's.
    auto x = filled(BT * F, 1), y = filled(BT * F, 2), z = filled(BT * F, 3), dz = filled(BT * F, 4);
    auto w = filled(F * C, 5, -0.02f, 0.02f), dw = filled(F * C, 6), bias = filled(F, 7), dbias = filled(F, 8);
    auto mean = filled(BT, 9), rstd = filled(BT, 10, 0.5f, 1.5f);
    auto qkv = filled(BT * 3 * C, 11), dqkv = filled(BT * 3 * C, 12), att = filled(B * NH * T * T, 13, 0.0f, 1e-3f);
    auto wte = filled(V * C, 14, -0.02f, 0.02f), dwte = filled(V * C, 15), wpe = filled(maxT * C, 16), dwpe = filled(maxT * C, 17);
    auto logits = filled(BT * V, 18), probs = filled(BT * V, 19, 0.0f, 1e-4f), losses = filled(BT, 20), dlosses = filled(BT, 21);
    auto params = filled(P, 22), grads = filled(P, 23), m = filled(P, 24), v = filled(P, 25, 0.0f, 1.0f);
    std::vector<std::int32_t> host_tokens(static_cast<std::size_t>(BT));
    for (std::size_t i = 0; i < host_tokens.size(); ++i) host_tokens[i] = static_cast<std::int32_t>((i * 2654435761u) % V);
    const cu::DeviceBuffer<std::int32_t> tokens(host_tokens);

    std::vector<Row> rows;
    namespace kw = sb::kernels;  // the work estimates beside the declarations (kernels.hpp)
    auto add = [&](std::string name, int calls, const kw::KernelWork& work, const std::function<void()>& call) {
      rows.push_back({std::move(name), calls, work.flops, work.bytes, seconds_per_call(call)});
    };
    const int l = static_cast<int>(L);
    add("embedding_forward", 1, kw::embedding_forward_work(B, T, C, 4), [&] { k.embedding_forward(y.data(), tokens.data(), wte.data(), wpe.data(), B, T, C); });
    add("embedding_backward", 1, kw::embedding_backward_work(B, T, C, 4), [&] { k.embedding_backward(dwte.data(), dwpe.data(), x.data(), tokens.data(), B, T, C); });
    add("layernorm_forward", 2 * l + 1, kw::layernorm_forward_work(BT, C, 4), [&] { k.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), BT, C); });
    add("layernorm_backward", 2 * l + 1, kw::layernorm_backward_work(BT, C, 4), [&] { k.layernorm_backward(dz.data(), dw.data(), dbias.data(), y.data(), x.data(), w.data(), mean.data(), rstd.data(), BT, C); });
    for (const auto& [name, in, out] : {std::tuple{"qkv", C, 3 * C}, {"attproj", C, C}, {"fc", C, F}, {"fcproj", F, C}}) {
      add(fmt::format("matmul_forward {} ({}x{}x{})", name, BT, in, out), l, kw::matmul_forward_work(BT, in, out, 4),
          [&, in = in, out = out] { k.matmul_forward(y.data(), x.data(), w.data(), bias.data(), BT, in, out); });
      add(fmt::format("matmul_backward {}", name), l, kw::matmul_backward_work(BT, in, out, 4),
          [&, in = in, out = out] { k.matmul_backward(dz.data(), dw.data(), dbias.data(), y.data(), x.data(), w.data(), BT, in, out); });
    }
    add(fmt::format("matmul_forward head ({}x{}x{})", BT, C, V), 1, kw::matmul_forward_work(BT, C, V, 4),
        [&] { k.matmul_forward(logits.data(), x.data(), wte.data(), nullptr, BT, C, V); });
    add("matmul_backward head", 1, kw::matmul_backward_work(BT, C, V, 4),
        [&] { k.matmul_backward(dz.data(), dwte.data(), nullptr, probs.data(), x.data(), wte.data(), BT, C, V); });
    add("attention_forward", l, kw::attention_forward_work(B, T, C, NH, 4),
        [&] { k.attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH); });
    add("attention_backward", l, kw::attention_backward_work(B, T, C, NH, 4),
        [&] { k.attention_backward(dqkv.data(), x.data(), qkv.data(), att.data(), B, T, C, NH); });
    add("gelu_forward", l, kw::gelu_forward_work(BT * F, 4), [&] { k.gelu_forward(y.data(), x.data(), BT * F); });
    add("gelu_backward", l, kw::gelu_backward_work(BT * F, 4), [&] { k.gelu_backward(dz.data(), x.data(), y.data(), BT * F); });
    add("residual_forward", 2 * l, kw::residual_forward_work(BT * C, 4), [&] { k.residual_forward(z.data(), x.data(), y.data(), BT * C); });
    add("residual_backward", 2 * l, kw::residual_backward_work(BT * C, 4), [&] { k.residual_backward(z.data(), dz.data(), y.data(), BT * C); });
    add(fmt::format("crossentropy_forward ({}x{})", BT, V), 1, kw::crossentropy_forward_work(BT, V, 4),
        [&] { k.crossentropy_forward(losses.data(), probs.data(), logits.data(), tokens.data(), BT, V); });
    add("crossentropy_backward", 1, kw::crossentropy_backward_work(BT, V, 4),
        [&] { k.crossentropy_backward(logits.data(), probs.data(), tokens.data(), dlosses.data(), BT, V); });
    add("squared_norm (all params)", 1, kw::squared_norm_work(P), [&] { (void)k.squared_norm(grads.data(), P); });
    add("adamw_update (all params)", 1, kw::adamw_update_work(P),
        [&] { k.adamw_update(params.data(), grads.data(), m.data(), v.data(), P, 3e-4, 0.9, 0.95, 1e-8, 0.1, 3); });

    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds * a.calls_per_step > b.seconds * b.calls_per_step; });
    double total = 0;
    for (const Row& r : rows) total += r.seconds * r.calls_per_step;
    std::string text = fmt::format("GPT kernels per training step on {} (gpt2-124m shapes, B={} T={}, fp32)\n", cu::describe_device(0), B, T);
    text += fmt::format("{:<44} {:>6} {:>10} {:>10} {:>7} {:>9} {:>9}\n", "kernel", "calls", "ms/call", "ms/step", "share", "TFLOP/s", "GB/s");
    for (const Row& r : rows)
      text += fmt::format("{:<44} {:>6} {:>10.3f} {:>10.2f} {:>6.1f}% {:>9.1f} {:>9.0f}\n", r.name, r.calls_per_step, r.seconds * 1e3,
                          r.seconds * r.calls_per_step * 1e3, 100 * r.seconds * r.calls_per_step / total,
                          r.flops > 0 ? r.flops / r.seconds * 1e-12 : 0.0, r.bytes / r.seconds * 1e-9);
    text += fmt::format("sum of kernels: {:.1f} ms per step\n", total * 1e3);
    write_summary(text);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_cuda_gpt_kernels: %s\n", error.what());
    return 1;
  }
  return 0;
}
