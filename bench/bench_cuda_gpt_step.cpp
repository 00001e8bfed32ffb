// SPDX-License-Identifier: Apache-2.0
// One GPT training step on the GPU (cuda back-end, every buffer on the device) in fp32 or with
// bf16/fp16 storage (native tensor-core kernels, fp32 master weights and gradients): zero_grad,
// forward, backward, AdamW with clipping and, in 16-bit, the rounding of the master weights into
// the 16-bit copy — timed with CUDA events around whole steps.
// Reports milliseconds per step, tokens per second, achieved TFLOP/s (gpt_flops.hpp, the
// trainer's definition) and MFU against the device's dense bf16 peak (the yardstick)
// and its fp32 (non-tensor-core) peak, where the device is one whose datasheet figures are
// below. Leaves out fp16 loss scaling (the steps are timed, not trained to convergence) and
// multi-GPU runs.
//
//   bench_cuda_gpt_step [--model NAME] [--precision fp32|bf16|fp16] [--batch B] [--seq-len T]
//                       [--steps N] [--summary FILE]      (defaults gpt2-124m, bf16, 8, 1024, 10)
// Without a visible GPU it prints SKIP and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "optim/adamw.hpp"

namespace {

using std::int64_t;

// Dense peaks from NVIDIA's datasheets (H100/H200 SXM: bf16 tensor core 1,979 TFLOP/s with
// sparsity, so 989.5 dense; fp32 67 TFLOP/s), keyed by a substring of the device name.
struct Peak {
  const char* name_part;
  double bf16_dense_tflops, fp32_tflops;
};
constexpr Peak kPeaks[] = {{"H200", 989.5, 67.0}, {"H100", 989.5, 67.0}};

const Peak* peak_for(const std::string& device) {
  for (const Peak& peak : kPeaks)
    if (device.find(peak.name_part) != std::string::npos) return &peak;
  return nullptr;
}

struct Options {
  std::string model = "gpt2-124m";
  std::string precision = "bf16";
  int64_t batch = 8, seq_len = 1024;
  int steps = 10;
  std::string summary;
};

struct StepResult {
  double seconds_per_step = 0;
  float first_loss = 0, last_loss = 0;
  int64_t device_bytes = 0;
};

template <class S>
StepResult measure(const Options& o) {
  using namespace sb;
  const gpt::GptConfig config = gpt::gpt_config_by_name(o.model);
  MemoryTracker tracker;
  gpt::GptModelT<S> model(config, o.batch, o.seq_len, kernels::Backend::cuda, tracker);
  model.init_weights(42);
  optim::AdamW optimizer(model.parameter_slices(), optim::AdamWConfig{}, kernels::Backend::cuda, tracker);
  const CounterRng rng(7, 0);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(o.batch * (o.seq_len + 1)));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<std::int32_t>(rng.below(i, static_cast<std::uint64_t>(config.vocab)));
  const std::vector<std::int32_t> targets(tokens.begin() + 1, tokens.end());
  auto step = [&] {
    model.zero_grad();
    const float loss = model.forward(tokens.data(), targets.data(), o.batch, o.seq_len);
    model.backward();
    optimizer.clip_and_step(3e-4);
    model.sync_storage_parameters();
    return loss;
  };
  StepResult r;
  r.first_loss = step();  // warm-up: cuBLAS handles, plans, first-touch
  step();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, kernels::cuda::default_context().stream());
  for (int i = 0; i < o.steps; ++i) r.last_loss = step();
  cudaEventRecord(stop, kernels::cuda::default_context().stream());
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  r.seconds_per_step = ms * 1e-3 / o.steps;
  r.device_bytes = tracker.usage().total_peak;
  return r;
}

StepResult measure_in(const Options& o) {
  if (o.precision == "fp32") return measure<float>(o);
  if (o.precision == "bf16") return measure<sb::bf16>(o);
  return measure<sb::fp16>(o);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--model" && has_value) o.model = argv[++i];
    else if (arg == "--precision" && has_value) o.precision = argv[++i];
    else if (arg == "--batch" && has_value) o.batch = std::stoll(argv[++i]);
    else if (arg == "--seq-len" && has_value) o.seq_len = std::stoll(argv[++i]);
    else if (arg == "--steps" && has_value) o.steps = std::stoi(argv[++i]);
    else if (arg == "--summary" && has_value) o.summary = argv[++i];
    else {
      std::fprintf(stderr, "bench_cuda_gpt_step: unknown argument '%s' (known: --model NAME, --precision P, "
                           "--batch B, --seq-len T, --steps N, --summary FILE, --benchmark_*)\n", arg.c_str());
      return 2;
    }
  }
  if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16") {
    std::fprintf(stderr, "bench_cuda_gpt_step: --precision must be fp32, bf16 or fp16, not '%s'\n",
                 o.precision.c_str());
    return 2;
  }
  auto write_summary = [&](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    if (!o.summary.empty()) std::ofstream(o.summary) << text;
  };
  if (sb::kernels::cuda::visible_device_count() == 0) {
    write_summary("SKIP: bench_cuda_gpt_step: no CUDA device visible, nothing measured\n");
    return 0;
  }
  try {
    const std::string device = sb::kernels::cuda::describe_device(0);
    const sb::gpt::GptConfig config = sb::gpt::gpt_config_by_name(o.model);
    const double flops = sb::gpt::gpt_training_flops(config, o.batch, o.seq_len);
    const Peak* peak = peak_for(device);
    benchmark::AddCustomContext("gpu", device);
    StepResult result;
    const std::string name = fmt::format("gpt_step/{}/{}/B={}/T={}", o.model, o.precision, o.batch, o.seq_len);
    benchmark::RegisterBenchmark(name.c_str(), [&](benchmark::State& state) {
      for (auto _ : state) {
        result = measure_in(o);
        state.SetIterationTime(result.seconds_per_step);
      }
      const double tflops = flops / result.seconds_per_step * 1e-12;
      state.counters["TFLOPs"] = tflops;
      state.counters["tokens_per_s"] = static_cast<double>(o.batch * o.seq_len) / result.seconds_per_step;
      if (peak) state.counters["MFU_bf16_dense"] = tflops / peak->bf16_dense_tflops;
    })->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    const double tflops = flops / result.seconds_per_step * 1e-12;
    std::string text = fmt::format("GPT training step on {}\n", device);
    text += fmt::format("{} {} B={} T={}: {:.2f} ms/step over {} steps, {:.0f} tokens/s, {:.1f} TFLOP/s "
                        "({:.3g} TFLOP per step), tracked memory {:.2f} GiB, loss {:.4f} -> {:.4f}\n",
                        o.model, o.precision, o.batch, o.seq_len, result.seconds_per_step * 1e3, o.steps,
                        static_cast<double>(o.batch * o.seq_len) / result.seconds_per_step, tflops, flops * 1e-12,
                        static_cast<double>(result.device_bytes) / (1 << 30), result.first_loss, result.last_loss);
    if (peak)
      text += fmt::format("MFU {:.1f}% of the dense bf16 peak ({} TFLOP/s), {:.1f}% of the fp32 peak ({} TFLOP/s)\n",
                          100 * tflops / peak->bf16_dense_tflops, peak->bf16_dense_tflops,
                          100 * tflops / peak->fp32_tflops, peak->fp32_tflops);
    else
      text += "MFU: no datasheet peak for this device in bench_cuda_gpt_step.cpp\n";
    write_summary(text);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_cuda_gpt_step: %s\n", error.what());
    return 1;
  }
  return 0;
}
