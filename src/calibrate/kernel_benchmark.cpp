// SPDX-License-Identifier: Apache-2.0
// A micro-batch runs in its own model (weights initialised as for training, tokens, targets and
// images random inside their ranges) with a kernels::KernelRecorder whose hooks time each call;
// the optimizer's calls and fills run on buffers of their own shapes.
#include "calibrate/kernel_benchmark.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/statistics.hpp"
#include "kernels/storage_kernels.hpp"
#include "measure/timing.hpp"
#include "models/gpt/gpt.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"

namespace sb::calibrate {

namespace {

using costmodel::KernelCall;
using costmodel::KernelTime;
using kernels::KernelRecorder;
using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A buffer of n values of T, random in [-scale, scale].
template <class T>
std::vector<T> random_buffer(i64 n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<T> v(static_cast<std::size_t>(std::max<i64>(n, 1)));
  for (T& x : v) {
    const float value = u(rng);
    if constexpr (std::is_same_v<T, bf16>) x = to_bf16(value);
    else if constexpr (std::is_same_v<T, fp16>) x = to_fp16(value);
    else x = static_cast<T>(value);
  }
  return v;
}
std::vector<std::int32_t> random_indices(i64 n, i64 bound, std::mt19937& rng) {
  std::uniform_int_distribution<std::int32_t> u(0, static_cast<std::int32_t>(bound - 1));
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

// One sequence ready to run: a pass runs it once and appends each call's seconds, in order.
using TimedPass = std::function<void(std::vector<double>& seconds)>;

// A micro-batch of a model: `run` makes its calls through `recorder`, whose hooks time each one
// (fenced, as a step's next call waits for it). The first pass checks that the model made the
// calls the sequence lists (those the cost model times).
TimedPass timed_micro_batch(const KernelSequence& q, std::shared_ptr<KernelRecorder> recorder,
                            std::function<void()> run) {
  auto checked = std::make_shared<bool>(false);
  return [&q, recorder, run, checked](std::vector<double>& seconds) {
    Clock::time_point start;
    recorder->set_call_hooks([&start] { start = Clock::now(); },
                             [&](const KernelCall&) {
                               Kokkos::fence();
                               seconds.push_back(seconds_since(start));
                             });
    run();
    recorder->set_call_hooks({}, {});
    if (!*checked)
      SB_CHECK(recorder->calls() == q.calls, "calibrate: {}'s micro-batch made other calls than recorded", q.model);
    *checked = true;
    recorder->clear();
  };
}

// tp rank 0 of q.tp; its collectives leave the partial sums as they are (timed as collectives).
template <class S>
TimedPass gpt_micro_batch(const KernelSequence& q, MemoryTracker& tracker, std::mt19937& rng) {
  const gpt::GptConfig g = gpt::gpt_config_by_name(q.model);
  const i64 B = q.batch, T = g.max_seq_len;
  gpt::GptPartition partition;
  partition.tp.size = static_cast<int>(q.tp);
  partition.tp.all_reduce_sum = partition.tp.all_reduce_max = [](std::span<float>) {};
  auto recorder = std::make_shared<KernelRecorder>();
  auto m = std::make_shared<gpt::GptModelT<S>>(g, B, T, kernels::Backend::cpu, tracker, partition, 0, recorder.get());
  m->init_weights(1);
  auto tokens = std::make_shared<std::vector<std::int32_t>>(random_indices(B * T, g.vocab, rng));
  auto targets = std::make_shared<std::vector<std::int32_t>>(random_indices(B * T, g.vocab, rng));
  return timed_micro_batch(q, recorder, [m, tokens, targets, B, T] {
    m->forward_stage(0, tokens->data(), nullptr, targets->data(), B, T);
    m->backward_stage(0, nullptr);
  });
}

template <class S>
TimedPass resnet_micro_batch(const KernelSequence& q, MemoryTracker& tracker, std::mt19937& rng) {
  const resnet::ResnetConfig r = resnet::resnet_config_by_name(q.model);
  const i64 N = q.batch;
  auto recorder = std::make_shared<KernelRecorder>();
  auto m = std::make_shared<resnet::ResnetModelT<S>>(r, N, kernels::Backend::cpu, tracker, resnet::ResnetPartition{},
                                                     1, recorder.get());
  m->init_weights(1);
  auto images = std::make_shared<std::vector<float>>(random_buffer<float>(N * m->input_floats_per_image(), 1.0f, rng));
  auto labels = std::make_shared<std::vector<std::int32_t>>(random_indices(N, r.classes, rng));
  return timed_micro_batch(q, recorder, [m, images, labels, N] {
    m->forward(0, images->data(), labels->data(), N, true);
    m->backward(0, nullptr);
  });
}

// One of a step's calls (costmodel::optimizer_kernel_calls) or a fill, on buffers of its own.
template <class S>
std::function<void()> step_call(kernels::StorageKernels<S>& k, const KernelCall& call, MemoryTracker& tracker,
                                std::mt19937& rng) {
  const i64 N = call.shape.at(0);
  const auto f32 = [&](float scale) {
    return std::make_shared<std::vector<float>>(random_buffer<float>(N, scale, rng));
  };
  if (call.kernel == "fill") {
    auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(N));
    return [bytes] { std::memset(bytes->data(), 0, bytes->size()); };
  }
  if (call.kernel == "narrow") {
    auto wide = f32(0.02f);
    auto out = std::make_shared<std::vector<S>>(static_cast<std::size_t>(N));
    return [=, &k] { k.narrow(out->data(), wide->data(), N); };
  }
  SB_CHECK(call.kernel == "adamw_step" || call.kernel == "sgd_step", "calibrate: no benchmark for '{}'", call.kernel);
  auto param = f32(0.02f), grad = f32(0.01f);
  std::vector<optim::ParameterSlice> slices = {{"w", param->data(), grad->data(), N, true, false}};
  if (call.kernel == "adamw_step") {
    auto adamw = std::make_shared<optim::AdamW>(slices, optim::AdamWConfig{}, kernels::Backend::cpu, tracker);
    return [adamw, param, grad] { adamw->clip_and_step(1e-4); };
  }
  auto sgd = std::make_shared<optim::Sgd>(slices, optim::SgdConfig{}, kernels::Backend::cpu, tracker);
  return [sgd, param, grad] { sgd->clip_and_step(1e-4); };
}

template <class S>
TimedPass step_calls(const KernelSequence& q, kernels::StorageKernels<S>& k, MemoryTracker& tracker,
                     std::mt19937& rng) {
  std::vector<std::function<void()>> runs;
  for (const KernelCall& call : q.calls) runs.push_back(step_call<S>(k, call, tracker, rng));
  return [runs](std::vector<double>& seconds) {
    for (const auto& run : runs) {
      const Clock::time_point start = Clock::now();
      run();
      Kokkos::fence();
      seconds.push_back(seconds_since(start));
    }
  };
}

// Every call is timed where the trainer makes it: inside its micro-batch, as the model runs it
// (each layer reading what the one before it wrote, as near or as far in the caches as in a
// training step), or inside its optimizer step. Timing one call over and over on the same
// buffers instead (its operands then stay in L1/L2) measured this machine's GEMMs 15-22% and its
// memory-bound kernels 2-5x faster than in a step, and predicted every training step 20-35%
// short; a sequence whose calls all read cold buffers predicted gpt-nano's steps 20-36% long.
// The sequences are timed in `rounds` rounds over the whole list; within a round each sequence
// runs at least kMinPasses passes after a warm-up pass, within a budget of seconds_per_call /
// kBudgetRounds per distinct call (a model's blocks repeat the same calls: each repeat is a
// sample, not a longer budget; budgeting every repeat doubled calibrate's time), and a call's
// median pass counts; a call that occurs in several
// sequences or several times in one (the same kernel and shape) takes the mean of them; over the
// rounds the median counts, so a slow spell of the machine (a neighbour, a clock change) lands on
// one round, not on every repetition (calibrate_site.cpp spreads the rounds further: one per
// process, minutes apart).
constexpr int kBudgetRounds = 3;
constexpr int kMinPasses = 3;

template <class S>
std::vector<KernelTime> time_all(const std::vector<KernelSequence>& sequences, const std::string& precision,
                                 int devices, int ranks, double seconds_per_call, int rounds,
                                 const std::function<void(std::size_t, std::size_t)>& progress) {
  SB_CHECK(rounds >= 1, "calibrate: {} rounds", rounds);
  MemoryTracker tracker;
  kernels::StorageKernels<S> k(kernels::Backend::cpu, tracker);
  std::mt19937 rng(1);
  // each sequence, ready; `id`: the distinct (kernel, shape) a call times
  std::map<std::pair<std::string, std::vector<i64>>, std::size_t> ids;
  std::vector<KernelCall> distinct;
  std::vector<std::vector<std::size_t>> call_ids(sequences.size());
  std::vector<TimedPass> passes_of(sequences.size());
  std::vector<std::size_t> distinct_in(sequences.size());  // distinct calls of each sequence
  std::size_t calls_per_round = 0;
  for (std::size_t q = 0; q < sequences.size(); ++q) {
    const KernelSequence& seq = sequences[q];
    for (const KernelCall& call : seq.calls) {
      const auto [at, added] = ids.try_emplace({call.kernel, call.shape}, distinct.size());
      if (added) distinct.push_back(call);
      call_ids[q].push_back(at->second);
    }
    distinct_in[q] = std::set<std::size_t>(call_ids[q].begin(), call_ids[q].end()).size();
    calls_per_round += seq.calls.size();
    switch (seq.source) {
      case KernelSequence::Source::gpt_micro_batch: passes_of[q] = gpt_micro_batch<S>(seq, tracker, rng); break;
      case KernelSequence::Source::resnet_micro_batch: passes_of[q] = resnet_micro_batch<S>(seq, tracker, rng); break;
      case KernelSequence::Source::step_calls: passes_of[q] = step_calls<S>(seq, k, tracker, rng); break;
    }
  }
  // by_round[id]: the call's figure in each round
  std::vector<std::vector<double>> by_round(distinct.size());
  std::size_t done = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> sum(distinct.size(), 0.0);
    std::vector<int> occurrences(distinct.size(), 0);
    for (std::size_t q = 0; q < sequences.size(); ++q) {
      const std::size_t count = call_ids[q].size();
      if (count == 0) continue;
      // warm-up pass: pages touched, threads awake; its length sets the passes within budget
      std::vector<double> warm;
      const Clock::time_point warm_start = Clock::now();
      passes_of[q](warm);
      const double pass_s = seconds_since(warm_start);
      SB_CHECK(warm.size() == count, "calibrate: a pass timed {} calls of {}", warm.size(), count);
      const double budget = seconds_per_call / kBudgetRounds * static_cast<double>(distinct_in[q]);
      const int passes = measure::count_to_fill(budget, pass_s, kMinPasses, 200);
      std::vector<std::vector<double>> seconds(count);
      for (int pass = 0; pass < passes; ++pass) {
        std::vector<double> one;
        passes_of[q](one);
        for (std::size_t i = 0; i < count; ++i) seconds[i].push_back(one[i]);
      }
      const bool micro_batch = sequences[q].source != KernelSequence::Source::step_calls;
      std::vector<double> figures(count);
      if (micro_batch) figures = per_call_seconds_of_passes(seconds);
      else
        for (std::size_t i = 0; i < count; ++i) figures[i] = median(seconds[i]);
      for (std::size_t i = 0; i < count; ++i) {
        sum[call_ids[q][i]] += figures[i];
        occurrences[call_ids[q][i]] += 1;
      }
      done += count;
      if (progress) progress(done, static_cast<std::size_t>(rounds) * calls_per_round);
    }
    for (std::size_t id = 0; id < distinct.size(); ++id) by_round[id].push_back(sum[id] / occurrences[id]);
  }
  std::vector<KernelTime> times;
  for (std::size_t id = 0; id < distinct.size(); ++id)
    times.push_back({distinct[id].kernel, precision, devices, ranks, distinct[id].shape, distinct[id].size,
                     median(by_round[id])});
  return times;
}

}  // namespace

std::vector<double> per_call_seconds_of_passes(const std::vector<std::vector<double>>& seconds_by_call) {
  std::vector<double> figures;
  if (seconds_by_call.empty()) return figures;
  const std::size_t passes = seconds_by_call.front().size();
  SB_CHECK(passes > 0, "calibrate: a sequence timed in no passes");
  std::vector<double> pass_seconds(passes, 0.0);
  double sum_of_medians = 0;
  for (const std::vector<double>& call : seconds_by_call) {
    SB_CHECK(call.size() == passes, "calibrate: a call timed in {} passes of {}", call.size(), passes);
    for (std::size_t p = 0; p < passes; ++p) pass_seconds[p] += call[p];
    figures.push_back(median(call));
    sum_of_medians += figures.back();
  }
  if (sum_of_medians <= 0) return figures;
  const double scale = median(std::move(pass_seconds)) / sum_of_medians;
  for (double& f : figures) f *= scale;
  return figures;
}

std::vector<KernelSequence> sequences_to_calibrate(const std::string& precision, i64 max_batch) {
  const auto timed = [max_batch](i64 batch) { return max_batch <= 0 || batch <= max_batch; };
  const auto micro_batch = [](const costmodel::KernelCalls& calls) {
    std::vector<KernelCall> all = calls.forward;
    all.insert(all.end(), calls.backward.begin(), calls.backward.end());
    return all;
  };
  std::vector<KernelSequence> sequences;
  for (const char* name : {"gpt-nano", "gpt-tiny"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    for (i64 tp : {1, 2, 4})
      for (i64 b : {1, 2, 4, 8, 16, 32}) {
        if (!timed(b)) continue;
        sequences.push_back({KernelSequence::Source::gpt_micro_batch, name, tp, b,
                             micro_batch(costmodel::gpt_stage_kernel_calls(g, tp, g.layers, true, true, b,
                                                                           g.max_seq_len, precision))});
      }
  }
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const std::size_t unit_count = resnet::resnet_pipeline_units(r).size();
  for (i64 n : {4, 8, 16, 32, 64, 128}) {
    if (!timed(n) && n != 4) continue;
    sequences.push_back({KernelSequence::Source::resnet_micro_batch, r.name, 1, n,
                         micro_batch(costmodel::resnet_stage_kernel_calls(r, 0, unit_count, n, precision))});
  }
  const int element_bytes = precision == "fp32" ? 4 : 2;
  // from a BatchNorm's 16 channels to a large matrix: the optimizer steps each tensor on its own
  for (i64 n : {16, 100, 1'000, 3'000, 10'000, 30'000, 100'000, 300'000, 1'000'000, 3'000'000, 10'000'000})
    for (const char* optimizer : {"adamw", "sgd"})
      sequences.push_back({KernelSequence::Source::step_calls, "", 1, 0,
                           costmodel::optimizer_kernel_calls(optimizer, n, {n}, element_bytes)});
  KernelSequence fills;
  for (i64 bytes = 1024; bytes <= (i64{64} << 20); bytes *= 4) {
    const kernels::KernelWork w = kernels::fill_work(bytes);
    fills.calls.push_back({"fill", {bytes}, w.size, w.flops, w.bytes});
  }
  sequences.push_back(std::move(fills));
  return sequences;
}

std::vector<KernelTime> time_kernel_sequences(const std::vector<KernelSequence>& sequences,
                                              const std::string& precision, int devices, int ranks,
                                              double seconds_per_call, int rounds,
                                              const std::function<void(std::size_t, std::size_t)>& progress) {
  if (precision == "fp32")
    return time_all<float>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  if (precision == "bf16")
    return time_all<bf16>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  if (precision == "fp16")
    return time_all<fp16>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  SB_USER_CHECK(false, "calibrate: unknown precision '{}' (fp32, bf16, fp16)", precision);
  return {};
}

}  // namespace sb::calibrate
