// Each call runs on buffers of its own shapes, filled with values of a trained network's order
// (weights ~0.02, activations ~1, tokens and targets inside the vocabulary), in storage S.
#include "cli/kernel_benchmark.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <map>

#include "core/check.hpp"
#include "core/statistics.hpp"
#include "core/memory.hpp"
#include "kernels/storage_kernels.hpp"
#include "measure/timing.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"

namespace sb::cli {

namespace {

using costmodel::KernelCall;
using costmodel::KernelTime;
using i64 = std::int64_t;

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

// The activation a sequence's previous call wrote: the next call reads it when it takes an
// activation of that size, as the trainer's next kernel reads what the last one wrote (a layer's
// output is the next one's input, a gradient flows on), while it is still in the nearest caches.
template <class S>
struct ActivationChain {
  std::shared_ptr<std::vector<S>> last;
};

// One call, prepared: its buffers live in the closure. Its activation input is the chain's last
// output where the sizes agree; its activation output becomes the chain's last.
template <class S>
std::function<void()> prepare(kernels::StorageKernels<S>& k, const KernelCall& call, MemoryTracker& tracker,
                              std::mt19937& rng, ActivationChain<S>& chain) {
  const auto& a = call.shape;
  const std::string& name = call.kernel;
  const auto act = [&](i64 n) { return std::make_shared<std::vector<S>>(random_buffer<S>(n, 1.0f, rng)); };
  const auto in = [&](i64 n) {
    return chain.last && static_cast<i64>(chain.last->size()) == std::max<i64>(n, 1) ? chain.last : act(n);
  };
  const auto produced = [&](std::shared_ptr<std::vector<S>> buffer) {
    chain.last = buffer;
    return buffer;
  };
  const auto wt = [&](i64 n) { return std::make_shared<std::vector<S>>(random_buffer<S>(n, 0.02f, rng)); };
  const auto f32 = [&](i64 n, float scale = 1.0f) {
    return std::make_shared<std::vector<float>>(random_buffer<float>(n, scale, rng));
  };
  const auto positive = [&](i64 n) {  // rstd, probabilities: in (0.5, 1.5)
    auto v = std::make_shared<std::vector<float>>(random_buffer<float>(n, 0.5f, rng));
    for (float& x : *v) x += 1.0f;
    return v;
  };
  const auto idx = [&](i64 n, i64 bound) {
    return std::make_shared<std::vector<std::int32_t>>(random_indices(n, bound, rng));
  };
  if (name == "matmul_forward" || name == "matmul_backward") {
    const i64 BT = a[0], C = a[1], OC = a[2];
    if (name == "matmul_forward") {
      auto inp = in(BT * C), w = wt(OC * C), bias = wt(OC), out = produced(act(BT * OC));
      return [&k, inp, w, bias, out, BT, C, OC] { k.matmul_forward(out->data(), inp->data(), w->data(), bias->data(), BT, C, OC); };
    }
    auto out = in(BT * OC), inp = act(BT * C), w = wt(OC * C);  // out: the output's gradient
    auto dinp = produced(act(BT * C));
    auto dw = f32(OC * C), db = f32(OC);
    return [&k, inp, w, out, dinp, dw, db, BT, C, OC] {
      k.matmul_backward(dinp->data(), dw->data(), db->data(), out->data(), inp->data(), w->data(), BT, C, OC);
    };
  }
  if (name == "embedding_forward" || name == "embedding_backward" || name == "embedding_shard_forward" ||
      name == "embedding_shard_backward") {
    const bool shard = name.find("shard") != std::string::npos;
    const i64 off = shard ? 1 : 0, Vr = shard ? a[0] : 256, B = a[off], T = a[off + 1], C = a[off + 2];
    const i64 V = shard ? 2 * Vr : Vr;  // half the tokens fall outside a shard, as with tp 2
    auto tokens = idx(B * T, V);
    auto wte = wt(Vr * C), wpe = wt(T * C);
    const bool forward = name.ends_with("_forward");
    auto out = forward ? produced(act(B * T * C)) : in(B * T * C);  // the output, or its gradient
    auto dwte = f32(Vr * C), dwpe = f32(T * C);
    if (name == "embedding_forward")
      return [&k, tokens, wte, wpe, out, B, T, C] { k.embedding_forward(out->data(), tokens->data(), wte->data(), wpe->data(), B, T, C); };
    if (name == "embedding_backward")
      return [&k, tokens, dwte, dwpe, out, B, T, C] { k.embedding_backward(dwte->data(), dwpe->data(), out->data(), tokens->data(), B, T, C); };
    if (name == "embedding_shard_forward")
      return [&k, tokens, wte, wpe, out, Vr, B, T, C] {
        k.embedding_shard_forward(out->data(), tokens->data(), wte->data(), wpe->data(), 0, Vr, B, T, C);
      };
    return [&k, tokens, dwte, dwpe, out, Vr, B, T, C] {
      k.embedding_shard_backward(dwte->data(), dwpe->data(), out->data(), tokens->data(), 0, Vr, B, T, C);
    };
  }
  if (name == "layernorm_forward" || name == "layernorm_backward") {
    const i64 N = a[0], C = a[1];
    auto w = wt(C), b = wt(C), mean = f32(N, 0.1f), rstd = positive(N);
    if (name == "layernorm_forward") {
      auto inp = in(N * C), out = produced(act(N * C));
      return [&k, inp, out, w, b, mean, rstd, N, C] {
        k.layernorm_forward(out->data(), mean->data(), rstd->data(), inp->data(), w->data(), b->data(), N, C);
      };
    }
    auto dout = in(N * C), inp = act(N * C), dinp = produced(act(N * C));
    auto dw = f32(C), db = f32(C);
    return [&k, inp, dout, dinp, w, dw, db, mean, rstd, N, C] {
      k.layernorm_backward(dinp->data(), dw->data(), db->data(), dout->data(), inp->data(), w->data(), mean->data(),
                           rstd->data(), N, C);
    };
  }
  if (name == "attention_forward" || name == "attention_backward") {
    const i64 B = a[0], T = a[1], C = a[2], NH = a[3];
    if (name == "attention_forward") {
      auto qkv = in(B * T * 3 * C), att = act(B * NH * T * T), out = produced(act(B * T * C));
      return [&k, qkv, out, att, B, T, C, NH] { k.attention_forward(out->data(), att->data(), qkv->data(), B, T, C, NH); };
    }
    auto out = in(B * T * C), qkv = act(B * T * 3 * C), att = act(B * NH * T * T);  // out: the output's gradient
    auto scratch = act(B * T * C);
    k.attention_forward(scratch->data(), att->data(), qkv->data(), B, T, C, NH);  // real probabilities
    auto dqkv = produced(act(B * T * 3 * C));
    return [&k, qkv, out, att, dqkv, B, T, C, NH] {
      k.attention_backward(dqkv->data(), out->data(), qkv->data(), att->data(), B, T, C, NH);
    };
  }
  if (name == "gelu_forward" || name == "gelu_backward" || name == "residual_forward" ||
      name == "residual_backward" || name == "relu_backward") {
    const i64 N = a[0];
    if (name == "gelu_forward") {
      auto x = in(N), y = produced(act(N));
      return [&k, x, y, N] { k.gelu_forward(y->data(), x->data(), N); };
    }
    if (name == "residual_forward") {
      auto x = in(N), y = act(N), z = produced(act(N));
      return [&k, x, y, z, N] { k.residual_forward(z->data(), x->data(), y->data(), N); };
    }
    if (name == "residual_backward") {  // z: the output's gradient; x, y: the inputs'
      auto z = in(N), y = act(N), x = produced(act(N));
      return [&k, x, y, z, N] { k.residual_backward(x->data(), y->data(), z->data(), N); };
    }
    auto y = in(N), x = act(N), z = produced(act(N));  // y: the output's gradient; z: the input's
    if (name == "gelu_backward") return [&k, x, y, z, N] { k.gelu_backward(z->data(), x->data(), y->data(), N); };
    return [&k, x, y, z, N] { k.relu_backward(z->data(), x->data(), y->data(), N); };
  }
  if (name.starts_with("crossentropy")) {
    const bool shard = name == "crossentropy_shard_partials" || name == "crossentropy_shard_backward";
    const i64 BT = shard ? a[1] : a[0], V = shard ? a[2] : a[1];
    // the logits the head's matmul wrote; the backward writes their gradient over them
    auto logits = name.ends_with("backward") ? produced(act(BT * V)) : in(BT * V);
    auto probs = act(BT * V), targets = idx(BT, V);
    auto losses = f32(BT), dlosses = f32(BT, 0.01f), row_max = f32(BT), sumexp = positive(BT), target_logit = f32(BT);
    if (name == "crossentropy_forward")
      return [&k, logits, probs, targets, losses, BT, V] {
        k.crossentropy_forward(losses->data(), probs->data(), logits->data(), targets->data(), BT, V);
      };
    if (name == "crossentropy_backward")
      return [&k, logits, probs, targets, dlosses, BT, V] {
        k.crossentropy_backward(logits->data(), probs->data(), targets->data(), dlosses->data(), BT, V);
      };
    if (name == "crossentropy_shard_max")
      return [&k, logits, row_max, BT, V] { k.crossentropy_shard_max(row_max->data(), logits->data(), BT, V); };
    if (name == "crossentropy_shard_partials")
      return [&k, logits, targets, row_max, sumexp, target_logit, BT, V] {
        k.crossentropy_shard_partials(sumexp->data(), target_logit->data(), logits->data(), row_max->data(),
                                      targets->data(), 0, BT, V);
      };
    if (name == "crossentropy_shard_finish")
      return [&k, logits, probs, losses, row_max, sumexp, target_logit, BT, V] {
        k.crossentropy_shard_finish(losses->data(), probs->data(), logits->data(), row_max->data(), sumexp->data(),
                                    target_logit->data(), BT, V);
      };
    if (name == "crossentropy_shard_backward")
      return [&k, logits, probs, targets, dlosses, BT, V] {
        k.crossentropy_shard_backward(logits->data(), probs->data(), targets->data(), dlosses->data(), 0, BT, V);
      };
  }
  if (name == "conv2d_forward" || name == "conv2d_backward" || name == "conv2d_backward_weight") {
    const i64 N = a[0], C = a[1], H = a[2], W = a[3], OC = a[4], KH = a[5], KW = a[6], stride = a[7], pad = a[8];
    const i64 OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
    const bool forward = name == "conv2d_forward";
    // forward: the input, the output written; backward: `out` is the output's gradient
    auto inp = forward ? in(N * C * H * W) : act(N * C * H * W), w = wt(OC * C * KH * KW);
    auto out = forward ? produced(act(N * OC * OH * OW)) : in(N * OC * OH * OW);
    if (forward)
      return [=, &k] { k.conv2d_forward(out->data(), inp->data(), w->data(), nullptr, N, C, H, W, OC, KH, KW, stride, pad); };
    auto dw = f32(OC * C * KH * KW);
    auto dinp = name == "conv2d_backward" ? produced(act(N * C * H * W)) : nullptr;
    return [=, &k] {
      k.conv2d_backward(dinp ? dinp->data() : nullptr, dw->data(), nullptr, out->data(), inp->data(), w->data(), N, C, H,
                        W, OC, KH, KW, stride, pad);
    };
  }
  if (name.starts_with("batchnorm2d")) {
    const i64 N = a[0], C = a[1], HW = a[2], n = N * C * HW;
    // channel_sums and forward_apply read the convolution's output; backward_sums and
    // backward_apply the output's gradient; forward_apply and backward_apply write `out`
    const bool forward = name == "batchnorm2d_channel_sums" || name == "batchnorm2d_forward_apply";
    auto inp = forward ? in(n) : act(n);
    auto dout = forward ? act(n) : in(n);
    auto relu_out = act(n), w = wt(C), b = wt(C);
    auto out = name.ends_with("_apply") ? produced(act(n)) : act(n);
    auto mean = f32(C, 0.1f), rstd = positive(C), dw = f32(C), db = f32(C);
    auto sums = std::make_shared<std::vector<double>>(static_cast<std::size_t>(2 * C + 1), 0.5);
    const double count = static_cast<double>(N * HW);
    if (name == "batchnorm2d_channel_sums")
      return [=, &k] { k.batchnorm2d_channel_sums(sums->data(), inp->data(), N, C, HW); };
    if (name == "batchnorm2d_forward_apply") {
      const bool residual = a.size() > 3 && a[3] != 0, relu = a.size() > 4 && a[4] != 0;
      return [=, &k] {
        k.batchnorm2d_forward_apply(out->data(), inp->data(), mean->data(), rstd->data(), w->data(), b->data(),
                                    residual ? dout->data() : nullptr, relu, N, C, HW);
      };
    }
    if (name == "batchnorm2d_backward_sums")
      return [=, &k] {
        k.batchnorm2d_backward_sums(sums->data(), dw->data(), db->data(), dout->data(), relu_out->data(), inp->data(),
                                    mean->data(), rstd->data(), N, C, HW);
      };
    if (name == "batchnorm2d_backward_apply")
      return [=, &k] {
        k.batchnorm2d_backward_apply(out->data(), dout->data(), relu_out->data(), inp->data(), w->data(), mean->data(),
                                     rstd->data(), sums->data(), count, N, C, HW);
      };
  }
  if (name == "global_avgpool_forward" || name == "global_avgpool_backward") {
    const i64 N = a[0], C = a[1], HW = a[2];
    const bool forward = name == "global_avgpool_forward";
    auto big = forward ? in(N * C * HW) : act(N * C * HW);
    auto small = forward ? produced(act(N * C)) : in(N * C);
    if (!forward) big = produced(big);
    if (forward)
      return [=, &k] { k.global_avgpool_forward(small->data(), big->data(), N, C, HW); };
    return [=, &k] { k.global_avgpool_backward(big->data(), small->data(), N, C, HW); };
  }
  if (name == "fill") {
    auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(a[0]));
    return [bytes] { std::memset(bytes->data(), 0, bytes->size()); };
  }
  if (name == "narrow") {
    const i64 N = a[0];
    auto wide = f32(N, 0.02f);
    auto out = std::make_shared<std::vector<S>>(static_cast<std::size_t>(N));
    return [=, &k] { k.narrow(out->data(), wide->data(), N); };
  }
  if (name == "adamw_step" || name == "sgd_step") {
    const i64 N = a[0];
    auto param = f32(N, 0.02f), grad = f32(N, 0.01f);
    std::vector<optim::ParameterSlice> slices = {{"w", param->data(), grad->data(), N, true, false}};
    if (name == "adamw_step") {
      auto adamw = std::make_shared<optim::AdamW>(slices, optim::AdamWConfig{}, kernels::Backend::cpu, tracker);
      return [adamw, param, grad] { adamw->clip_and_step(1e-4); };
    }
    auto sgd = std::make_shared<optim::Sgd>(slices, optim::SgdConfig{}, kernels::Backend::cpu, tracker);
    return [sgd, param, grad] { sgd->clip_and_step(1e-4); };
  }
  SB_CHECK(false, "calibrate: no benchmark for kernel '{}'", name);
  return {};
}

// Every call is timed where the trainer makes it: inside its micro-batch's sequence (each unit's
// forward in order, then each backward in reverse; the optimizer's calls; a fill), reading the
// activation the call before it wrote (ActivationChain) and its other operands from buffers of
// its own, so that its operands are as near or as far in the caches as in a training step.
// Timing one call over and over on the same buffers instead (its operands then stay in L1/L2)
// measured this machine's GEMMs 15-22% and its memory-bound kernels 2-5x faster than in a
// step, and predicted every training step 20-35% short; a sequence whose calls all read cold
// buffers predicted gpt-nano's steps 20-36% long. The sequences are timed in `rounds` rounds
// over the whole list; within a round each sequence runs at least kMinPasses passes after a
// warm-up pass, within a budget of seconds_per_call / kBudgetRounds per call, and a call's
// median pass counts; a call that occurs in several sequences (the same kernel and shape) takes
// the mean of them; over the rounds the median counts, so a slow spell of the machine (a
// neighbour, a clock change) lands on one round, not on every repetition (calibrate_site.cpp
// spreads the rounds further: one per process, minutes apart).
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
  // each sequence's calls, prepared; `id`: the distinct (kernel, shape) a call times
  std::map<std::pair<std::string, std::vector<i64>>, std::size_t> ids;
  std::vector<KernelCall> distinct;
  std::vector<std::vector<std::size_t>> call_ids(sequences.size());
  std::vector<std::vector<std::function<void()>>> runs(sequences.size());
  std::size_t calls_per_round = 0;
  for (std::size_t q = 0; q < sequences.size(); ++q) {
    ActivationChain<S> chain;
    for (const KernelCall& call : sequences[q].calls) {
      if (call.kernel == "narrow" && std::is_same_v<S, float>) continue;
      const auto [at, added] = ids.try_emplace({call.kernel, call.shape}, distinct.size());
      if (added) distinct.push_back(call);
      call_ids[q].push_back(at->second);
      runs[q].push_back(prepare<S>(k, call, tracker, rng, chain));
      ++calls_per_round;
    }
  }
  // by_round[id]: the call's figure in each round
  std::vector<std::vector<double>> by_round(distinct.size());
  std::size_t done = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> sum(distinct.size(), 0.0);
    std::vector<int> occurrences(distinct.size(), 0);
    for (std::size_t q = 0; q < sequences.size(); ++q) {
      const std::vector<std::function<void()>>& seq = runs[q];
      if (seq.empty()) continue;
      // warm-up pass: pages touched, threads awake; its length sets the passes within budget
      measure::HostClock clock([] { Kokkos::fence(); });
      const double pass_s = measure::time_pass(seq, clock);
      const double budget = seconds_per_call / kBudgetRounds * static_cast<double>(seq.size());
      const int passes = measure::count_to_fill(budget, pass_s, kMinPasses, 200);
      std::vector<std::vector<double>> seconds =
          measure::time_in_turns(seq, {.warmups = 0, .rounds = passes, .iterations = 1}, clock);
      for (std::size_t i = 0; i < seq.size(); ++i) {
        sum[call_ids[q][i]] += median(std::move(seconds[i]));
        occurrences[call_ids[q][i]] += 1;
      }
      done += seq.size();
      if (progress) progress(done, static_cast<std::size_t>(rounds) * calls_per_round);
    }
    for (std::size_t id = 0; id < distinct.size(); ++id)
      by_round[id].push_back(sum[id] / occurrences[id]);
  }
  std::vector<KernelTime> times;
  for (std::size_t id = 0; id < distinct.size(); ++id)
    times.push_back({distinct[id].kernel, precision, devices, ranks, distinct[id].shape, distinct[id].size,
                     median(by_round[id])});
  return times;
}

}  // namespace

std::vector<KernelSequence> sequences_to_calibrate(int element_bytes, i64 max_batch) {
  const auto timed = [max_batch](i64 batch) { return max_batch <= 0 || batch <= max_batch; };
  // a micro-batch as the trainer runs it: each unit's forward in order, then each backward in
  // reverse order
  const auto micro_batch = [](const std::vector<costmodel::KernelCalls>& units) {
    KernelSequence seq;
    for (const costmodel::KernelCalls& u : units) seq.calls.insert(seq.calls.end(), u.forward.begin(), u.forward.end());
    for (auto u = units.rbegin(); u != units.rend(); ++u)
      seq.calls.insert(seq.calls.end(), u->backward.begin(), u->backward.end());
    return seq;
  };
  std::vector<KernelSequence> sequences;
  for (const char* name : {"gpt-nano", "gpt-tiny"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    for (i64 tp : {1, 2, 4})
      for (i64 b : {1, 2, 4, 8, 16, 32}) {
        if (!timed(b)) continue;
        std::vector<costmodel::KernelCalls> units;
        for (auto unit : {costmodel::GptUnitKind::embedding, costmodel::GptUnitKind::block, costmodel::GptUnitKind::head})
          units.push_back(costmodel::gpt_unit_kernel_calls(g, unit, tp, b, g.max_seq_len, element_bytes));
        sequences.push_back(micro_batch(units));
      }
  }
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const std::size_t unit_count = resnet::resnet_pipeline_units(r).size();
  for (i64 n : {4, 8, 16, 32, 64, 128}) {
    if (!timed(n) && n != 4) continue;
    std::vector<costmodel::KernelCalls> units;
    for (std::size_t u = 0; u < unit_count; ++u)
      units.push_back(costmodel::resnet_unit_kernel_calls(r, u, n, element_bytes));
    sequences.push_back(micro_batch(units));
  }
  for (i64 n : {10'000, 30'000, 100'000, 300'000, 1'000'000, 3'000'000, 10'000'000})
    for (const char* optimizer : {"adamw", "sgd"})
      sequences.push_back({costmodel::optimizer_kernel_calls(optimizer, n, n, element_bytes)});
  KernelSequence fills;
  for (i64 bytes = 1024; bytes <= (i64{64} << 20); bytes *= 4)
    fills.calls.push_back({"fill", {bytes}, static_cast<double>(bytes)});
  sequences.push_back(std::move(fills));
  return sequences;
}

std::vector<KernelTime> time_kernel_sequences(const std::vector<KernelSequence>& sequences, const std::string& precision,
                                              int devices, int ranks, double seconds_per_call, int rounds,
                                              const std::function<void(std::size_t, std::size_t)>& progress) {
  if (precision == "fp32") return time_all<float>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  if (precision == "bf16") return time_all<bf16>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  if (precision == "fp16") return time_all<fp16>(sequences, precision, devices, ranks, seconds_per_call, rounds, progress);
  SB_USER_CHECK(false, "calibrate: unknown precision '{}' (fp32, bf16, fp16)", precision);
  return {};
}

}  // namespace sb::cli
