// SPDX-License-Identifier: Apache-2.0
// One training step of each reference model on its real data, at the thread count of
// SB_THREADS: GPT (forward, backward, clip, AdamW) on SOTU windows and resnet-mini (forward,
// backward, SGD) on MNIST batches, each in fp32 and with bf16 and fp16 storage (fp32 master
// weights and gradients); the figures compared with PyTorch eager by
// compare_pytorch.py. Leaves out evaluation and result writing (the trainer's own cost).
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/install_paths.hpp"
#include "core/memory.hpp"
#include "data/image_dataset.hpp"
#include "data/text_corpus.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "runtime/parallel_runtime.hpp"

namespace {

std::string data_dir() { return sb::datasets_dir().string(); }

// S: the storage type (float, or bf16 with fp32 master weights and gradients).
template <class S>
void gpt_training_step(benchmark::State& state, const std::string& model_name) {
  const auto B = state.range(0);
  const auto config = sb::gpt::gpt_config_by_name(model_name);
  const auto T = config.max_seq_len;
  static const auto corpus = sb::data::load_sotu(data_dir() + "/sotu");
  sb::MemoryTracker tracker;
  sb::gpt::GptModelT<S> model(config, B, T, sb::kernels::Backend::cpu, tracker);
  model.init_weights(1);
  sb::optim::AdamW optimizer(model.parameter_slices(), {}, sb::kernels::Backend::cpu, tracker);
  const sb::data::WindowSampler sampler(corpus.train(), B, T, 1);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T)), targets(tokens.size());
  std::int64_t step = 0;
  for (auto _ : state) {
    sampler.training_batch(step++, tokens.data(), targets.data());
    model.zero_grad();
    benchmark::DoNotOptimize(model.forward(tokens.data(), targets.data(), B, T));
    model.backward();
    optimizer.clip_and_step(3e-4);
    model.sync_storage_parameters();
    Kokkos::fence();
  }
  const double flops = sb::gpt::gpt_training_flops(config, B, T);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["batch"] = static_cast<double>(B);
  state.counters["seq_len"] = static_cast<double>(T);
}

void BM_gpt_training_step(benchmark::State& state, const std::string& model_name) {
  gpt_training_step<float>(state, model_name);
}
void BM_gpt_bf16_training_step(benchmark::State& state, const std::string& model_name) {
  gpt_training_step<sb::bf16>(state, model_name);
}
void BM_gpt_fp16_training_step(benchmark::State& state, const std::string& model_name) {
  gpt_training_step<sb::fp16>(state, model_name);
}

// S: the storage type, as for the GPT.
template <class S>
void resnet_training_step(benchmark::State& state) {
  const auto N = state.range(0);
  const auto config = sb::resnet::resnet_config_by_name("resnet-mini");
  static const auto mnist = sb::data::load_mnist(data_dir() + "/mnist", "train");
  sb::MemoryTracker tracker;
  sb::resnet::ResnetModelT<S> model(config, N, sb::kernels::Backend::cpu, tracker);
  model.init_weights(1);
  sb::optim::Sgd optimizer(model.parameter_slices(), {}, sb::kernels::Backend::cpu, tracker);
  sb::data::ImageBatcher batches(mnist, N, 1, true);
  std::vector<float> images(static_cast<std::size_t>(N * mnist.image_size()));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(N));
  std::int64_t step = 0;
  // One untimed step first, as pytorch_peer.py drops its first steps: it faults in the
  // activations, gradients and per-thread scratch, a one-off cost of a new model.
  const auto training_step = [&] {
    batches.batch(step++, images.data(), labels.data());
    model.zero_grad();
    benchmark::DoNotOptimize(model.forward(images.data(), labels.data(), N, true));
    model.backward();
    optimizer.clip_and_step(0.01);
    model.sync_storage_parameters();
    Kokkos::fence();
  };
  training_step();
  for (auto _ : state) training_step();
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(N), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(sb::resnet::resnet_training_flops(config, N) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["batch"] = static_cast<double>(N);
}

void BM_resnet_training_step(benchmark::State& state) { resnet_training_step<float>(state); }
void BM_resnet_bf16_training_step(benchmark::State& state) { resnet_training_step<sb::bf16>(state); }
void BM_resnet_fp16_training_step(benchmark::State& state) { resnet_training_step<sb::fp16>(state); }

}  // namespace

BENCHMARK(BM_resnet_training_step)->Name("BM_resnet_training_step/resnet_mini")->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_resnet_bf16_training_step)->Name("BM_resnet_bf16_training_step/resnet_mini_bf16")->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_training_step, gpt_nano, std::string("gpt-nano"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_training_step, gpt_tiny, std::string("gpt-tiny"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_training_step, gpt_small, std::string("gpt-small"))->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_resnet_fp16_training_step)->Name("BM_resnet_fp16_training_step/resnet_mini_fp16")->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_bf16_training_step, gpt_nano_bf16, std::string("gpt-nano"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_bf16_training_step, gpt_tiny_bf16, std::string("gpt-tiny"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_bf16_training_step, gpt_small_bf16, std::string("gpt-small"))->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_fp16_training_step, gpt_nano_fp16, std::string("gpt-nano"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_fp16_training_step, gpt_tiny_fp16, std::string("gpt-tiny"))->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gpt_fp16_training_step, gpt_small_fp16, std::string("gpt-small"))->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  const char* env = std::getenv("SB_THREADS");
  const int threads = env ? std::atoi(env) : 1;
  sb::ParallelRuntime runtime(threads > 0 ? threads : 1);
  benchmark::AddCustomContext("threads", std::to_string(runtime.threads()));
  benchmark::AddCustomContext("kokkos", sb::ParallelRuntime::kokkos_version());
  benchmark::AddCustomContext("blas", sb::ParallelRuntime::blas_description());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
