// SPDX-License-Identifier: Apache-2.0
// Data parallelism trains the model one rank trains: on every rank, 5 steps of dp = world size
// (bucketed overlapped all-reduce, ZeRO-1, ZeRO-2) against 5 steps of one rank on the same global batch
// (computed on each rank alone, through a one-rank communicator). The only difference is the
// summation order of the gradient (per-rank means, then their average), ~1e-7 relative in
// fp32; AdamW's m/sqrt(v) can amplify it for an element whose gradient is near zero, up to a
// fraction of lr per step. So the documented fp32 tolerance is on the update w5 − w0:
//   - every element: |update_dp − update_single| ≤ 1e-2 · lr (one hundredth of one step's
//     largest AdamW move), and
//   - the whole model: ||update_dp − update_single|| ≤ 1e-4 · ||update_single||.
// ZeRO-1 and ZeRO-2 against plain data parallelism: the same bound. The ResNet cases (SGD,
// BatchNorm synchronised) compare each step from the same weights instead (see lockstep).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "mpi_test_environment.hpp"
#include "one_thread_runtime.hpp"
#include "runtime/parallel_runtime.hpp"
#include "plan/config.hpp"
#include "parallel/process_grid.hpp"
#include "train/data_parallel.hpp"
#include "train/distributed_step.hpp"
#include "train/training_task.hpp"

namespace sb::train {
namespace {

using parallel::testing::world;

constexpr int kSteps = 5;
constexpr double kLr = 0.002;

plan::TrainConfig config_from(const std::string& yaml) {
  return plan::parse_train_config(plan::parse_yaml_text(yaml, "test_data_parallel"), "test_data_parallel");
}

std::string gpt_yaml(int dp, int zero, double bucket_mb, bool overlap, int micro_batch = 0) {
  const std::string micro = micro_batch > 0 ? "micro: " + std::to_string(micro_batch) + ", " : "";
  return "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {" + micro + "global: 8}\nseq_len: 32\nsteps: 5\nseed: 3\n"
         "optimizer: {type: adamw, lr: " + std::to_string(kLr) + ", grad_clip: 1.0}\n"
         "strategy: {dp: " + std::to_string(dp) + ", zero: " + std::to_string(zero) +
         ", bucket_mb: " + std::to_string(bucket_mb) + ", overlap: " + (overlap ? "true" : "false") + "}\n";
}

// resnet-mini on MNIST, SGD with momentum: BatchNorm synchronised over the ranks (the
// statistics of the whole global batch, as one rank computes them).
std::string resnet_yaml(int dp, int zero, const char* batchnorm) {
  return "model: resnet-mini\ndata: {dataset: mnist}\nbatch: {global: 16}\nsteps: 5\nseed: 5\n"
         "optimizer: {type: sgd, lr: " + std::to_string(kLr * 25) + ", momentum: 0.9, weight_decay: 5.0e-4}\n"
         "strategy: {dp: " + std::to_string(dp) + ", zero: " + std::to_string(zero) +
         ", bucket_mb: 0.02, batchnorm: " + batchnorm + "}\n";
}

struct Trained {
  std::vector<float> initial, parameters;
  std::vector<double> losses;
  std::int64_t optimizer_bytes = 0, exchange_bytes = 0;
  std::int64_t grads_bytes = 0, comm_bytes = 0;  // tracked peaks
  std::int64_t grads_after = 0, comm_after = 0;  // tracked after the last step
  std::vector<std::int64_t> bytes_sent;  // per step, counted by the ring algorithms
  int buckets = 0;
};

// One run's model, grid and step on `ranks`, built in place (the step holds the others).
struct SteppedRun {
  SteppedRun(const plan::TrainConfig& config, parallel::Communicator& ranks)
      : grid(ranks, static_cast<int>(config.strategy.dp), static_cast<int>(config.strategy.tp),
             static_cast<int>(config.strategy.pp)),
        task(make_training_task(config, plan::runnable_plan(config), kernels::Backend::cpu, tracker, grid)),
        step(config, *task, grid, kernels::Backend::cpu, tracker) {}
  std::vector<float> parameters() const { return {task->parameters_flat().begin(), task->parameters_flat().end()}; }
  // The run's tracked model state into `t`: peaks, and what is held after the last step.
  void record_memory(Trained& t) const {
    t.optimizer_bytes = tracker.usage().peak_of(MemoryCategory::optimizer);
    t.grads_bytes = tracker.usage().peak_of(MemoryCategory::grads);
    t.comm_bytes = tracker.usage().peak_of(MemoryCategory::comm);
    t.grads_after = tracker.usage().of(MemoryCategory::grads);
    t.comm_after = tracker.usage().of(MemoryCategory::comm);
  }
  MemoryTracker tracker;
  parallel::ProcessGrid grid;
  std::unique_ptr<TrainingTask> task;
  DistributedStep step;
};

// kSteps steps of `config` on the ranks of `ranks` (dp×tp×pp of the config).
Trained train(const plan::TrainConfig& config, parallel::Communicator& ranks) {
  const auto run = std::make_unique<SteppedRun>(config, ranks);
  Trained t;
  t.initial = run->parameters();
  for (int step = 0; step < kSteps; ++step) {
    const StepResult r = run->step.run(step, kSteps);
    t.losses.push_back(r.loss);
    t.exchange_bytes = r.exchange.bytes;
    t.bytes_sent.push_back(r.exchange.bytes_sent);
    t.buckets = r.exchange.buckets;
  }
  t.parameters = run->parameters();
  run->record_memory(t);
  return t;
}

// The same config on this rank alone.
Trained train_alone(plan::TrainConfig config) {
  config.strategy.dp = 1;
  config.strategy.zero = 0;
  auto self = world().split(world().rank(), 0, "self");
  return train(config, *self);
}

// The ResNet cases step their two runs side by side (lockstep below). A ReLU network's trajectory
// is rounding-stable only until a pre-activation within rounding of zero falls on the other side
// of its kink: another summation order of the gradient makes that happen as early as the second
// step (resnet-mini at dp 4 on an AMD EPYC under OpenBLAS's Haswell kernels: one channel's
// BatchNorm bias gradient 0.23% off), and SGD at this rate amplifies it: run apart for 5 steps,
// about half the seeds' updates differed by 0.1-6.7%. From the same weights, ZeRO's forward and
// backward are plain data parallelism's bit for bit and only the sums' order differs (<1e-5
// relative: seeds 1-3, 5, 7-9 under both kernels); synchronised BatchNorm against one rank also sums
// its statistics in another order, so a crossing can happen within a step: a 1e-3 bound on it.
constexpr double kResnetRelativeTolerance = 1e-3;

// How far two runs' updates from `start` are apart: the largest element difference (and where),
// and the whole difference over the want run's whole update.
struct UpdateGap {
  double worst = 0;
  std::size_t worst_index = 0;
  double relative = 0;
};
UpdateGap update_gap(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& start) {
  UpdateGap gap;
  double difference_squared = 0, update_squared = 0;
  for (std::size_t i = 0; i < start.size(); ++i) {
    const double difference = std::abs(double(got[i]) - want[i]);
    const double update = double(want[i]) - start[i];
    if (difference > gap.worst) gap.worst = difference, gap.worst_index = i;
    difference_squared += difference * difference;
    update_squared += update * update;
  }
  gap.relative = std::sqrt(difference_squared / update_squared);
  return gap;
}

void expect_same_training(const Trained& got, const Trained& want, const std::string& what, double lr = kLr,
                          double relative_tolerance = 1e-4) {
  ASSERT_EQ(got.parameters.size(), want.parameters.size());
  ASSERT_EQ(got.initial, want.initial) << what << ": the runs must start from the same weights";
  const UpdateGap gap = update_gap(got.parameters, want.parameters, want.initial);
  const std::size_t worst = gap.worst_index;
  const double worst_difference = gap.worst, relative = gap.relative;
  EXPECT_LE(worst_difference, 1e-2 * lr) << what << ": parameter " << worst << " is " << got.parameters[worst]
                                          << ", one rank trained " << want.parameters[worst];
  EXPECT_LE(relative, relative_tolerance) << what << ": relative difference of the 5-step updates";
  if (world().rank() == 0)
    std::printf("%s: largest element difference %.3g (= %.3g lr), relative update difference %.3g\n", what.c_str(),
                worst_difference, worst_difference / lr, relative);
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(got.losses[s], want.losses[s], 1e-5 * std::abs(want.losses[s])) << what << ": loss of step " << s + 1;
}

struct LockstepRuns {
  std::vector<float> reference_initial;
  Trained candidate;               // its initial weights, last step's buckets and tracked memory
  double worst_step_relative = 0;  // max over steps of ||Δupdate|| / ||update_reference||
  double worst_element = 0;        // max over steps and elements of |Δupdate|
  double worst_loss = 0;           // max over steps of |Δloss| / |loss_reference|
};

// kSteps steps of `reference` and `candidate` side by side: before each step the candidate takes
// the reference's weights (its optimizer state stays its own), so each step's update is compared
// from one starting point and a difference of one step cannot grow over the next ones.
LockstepRuns lockstep(const plan::TrainConfig& reference, parallel::Communicator& reference_ranks,
                      const plan::TrainConfig& candidate, parallel::Communicator& candidate_ranks) {
  const auto ref = std::make_unique<SteppedRun>(reference, reference_ranks);
  const auto cand = std::make_unique<SteppedRun>(candidate, candidate_ranks);
  LockstepRuns out;
  out.reference_initial = ref->parameters();
  out.candidate.initial = cand->parameters();
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> start = ref->parameters();  // w[step]
    std::copy(start.begin(), start.end(), cand->task->parameters_flat().begin());
    cand->task->parameters_updated();
    const StepResult want = ref->step.run(step, kSteps), got = cand->step.run(step, kSteps);
    out.worst_loss = std::max(out.worst_loss, std::abs(got.loss - want.loss) / std::abs(want.loss));
    const UpdateGap gap = update_gap(cand->parameters(), ref->parameters(), start);
    out.worst_element = std::max(out.worst_element, gap.worst);
    out.worst_step_relative = std::max(out.worst_step_relative, gap.relative);
    out.candidate.buckets = got.exchange.buckets;
  }
  cand->record_memory(out.candidate);
  return out;
}

// The bound on each step of a lockstep pair: every element within 1e-2 lr, the whole update
// within relative_tolerance, the loss (computed from the same weights) within 1e-5.
void expect_same_steps(const LockstepRuns& runs, const std::string& what, double lr, double relative_tolerance) {
  ASSERT_EQ(runs.candidate.initial, runs.reference_initial) << what << ": the runs must start from the same weights";
  EXPECT_LE(runs.worst_element, 1e-2 * lr) << what << ": largest element difference of one step's update";
  EXPECT_LE(runs.worst_step_relative, relative_tolerance) << what << ": relative difference of one step's update";
  EXPECT_LE(runs.worst_loss, 1e-5) << what << ": relative loss difference from the same weights";
  if (world().rank() == 0)
    std::printf("%s, step by step from the same weights: largest element difference %.3g (= %.3g lr), relative "
                "update difference %.3g, loss %.3g\n",
                what.c_str(), runs.worst_element, runs.worst_element / lr, runs.worst_step_relative, runs.worst_loss);
}

TEST(DataParallel, GptBucketedOverlappedAllReduceTrainsTheSameModelAsOneRank) {
  const plan::TrainConfig config = config_from(gpt_yaml(world().size(), 0, 0.05, true));  // ~13k floats a bucket
  const Trained parallel = train(config, world());
  EXPECT_GT(parallel.buckets, 4) << "the bucket size should split gpt-nano's gradients into several buckets";
  EXPECT_EQ(parallel.exchange_bytes, static_cast<std::int64_t>(parallel.parameters.size() * sizeof(float)));
  expect_same_training(parallel, train_alone(config), "dp=" + std::to_string(world().size()));
}

TEST(DataParallel, GptWithoutOverlapTrainsTheSameModel) {
  const plan::TrainConfig config = config_from(gpt_yaml(world().size(), 0, 0.05, false));
  expect_same_training(train(config, world()), train_alone(config), "overlap off");
}

TEST(DataParallel, ZeroOneEqualsPlainDataParallelWithOneDpthOfTheOptimizerState) {
  const plan::TrainConfig plain_config = config_from(gpt_yaml(world().size(), 0, 25, true));
  const plan::TrainConfig zero_config = config_from(gpt_yaml(world().size(), 1, 25, true));
  const Trained plain = train(plain_config, world());
  const Trained zero = train(zero_config, world());
  expect_same_training(zero, plain, "zero-1");
  const auto n = static_cast<std::int64_t>(plain.parameters.size());
  const std::int64_t shard = (n + world().size() - 1) / world().size();
  // AdamW keeps m and v: 8 bytes per parameter of this rank's shard (the last shard is shorter).
  const std::int64_t mine = std::min(shard, n - shard * world().rank());
  EXPECT_EQ(zero.optimizer_bytes, 8 * mine);
  EXPECT_EQ(plain.optimizer_bytes, 8 * n);
  // Every rank ends with the same parameters (the all-gather).
  std::vector<float> rank0 = zero.parameters;
  world().broadcast(rank0.data(), static_cast<std::int64_t>(rank0.size()), parallel::DataType::f32, 0);
  EXPECT_EQ(rank0, zero.parameters);
}

// ZeRO-2: each micro-batch's gradients reduced to their owners as backward finishes them
// (micro-batches of 2 rows: several per step), so the same model as plain data parallelism with
// 1/dp of the gradients (ceil(N/dp) floats) and of the optimizer state kept, and ZeRO-1 with the
// full gradient and nothing more.
TEST(DataParallel, ZeroTwoEqualsPlainDataParallelWithOneDpthOfTheGradients) {
  const int dp = world().size();
  const Trained plain = train(config_from(gpt_yaml(dp, 0, 0.05, true, 2)), world());
  const Trained one = train(config_from(gpt_yaml(dp, 1, 0.05, true, 2)), world());
  // buckets of 0.02 MB against gpt-nano's 0.48 MB of gradients: a bucket's gradient pages go back
  // as its reduction starts, so at most two buckets' staging and one bucket's pages beyond what
  // backward is writing are held
  const Trained two = train(config_from(gpt_yaml(dp, 2, 0.02, true, 2)), world());
  expect_same_training(two, plain, "zero-2");
  expect_same_training(one, plain, "zero-1, micro-batches");
  const auto n = static_cast<std::int64_t>(plain.parameters.size());
  const std::int64_t shard = (n + dp - 1) / dp, mine = std::min(shard, n - shard * world().rank());
  EXPECT_EQ(plain.grads_bytes, 4 * n);
  EXPECT_EQ(one.grads_bytes, 4 * n) << "ZeRO-1 reduces into the full gradient: no second copy of the shard";
  EXPECT_EQ(two.grads_bytes, 4 * shard);
  EXPECT_EQ(two.optimizer_bytes, 8 * mine);
  // the unsharded gradients are resident only between backward and their bucket's reduction
  // (comm, with the buckets and the padded parameter exchange), never all at once, and none is
  // left after the step but the buckets kept for reuse and the padded exchange
  const std::int64_t padded = 4 * shard * dp;
  EXPECT_GT(two.comm_bytes, padded) << "backward's gradient pages and buckets should be charged while held";
  EXPECT_LT(two.comm_bytes, padded + 4 * n) << "the whole unsharded gradient was resident at once";
  EXPECT_LT(two.comm_after, padded + 4 * n / 2) << "gradient pages left resident after the step";
  EXPECT_EQ(two.grads_after, 4 * shard);
  if (world().rank() == 0)
    std::printf("zero-2 over %d ranks: grads %lld B (plain %lld); comm beyond the padded exchange (gradient pages "
                "while resident, bucket staging) at most %lld B, the full gradient %lld B\n",
                dp, static_cast<long long>(two.grads_bytes), static_cast<long long>(plain.grads_bytes),
                static_cast<long long>(two.comm_bytes - padded), static_cast<long long>(4 * n));
}

TEST(DataParallel, ResnetWithSynchronisedBatchNormTrainsTheSameModelAsOneRank) {
  const plan::TrainConfig config = config_from(resnet_yaml(world().size(), 0, "sync"));
  plan::TrainConfig alone = config;
  alone.strategy.dp = 1;
  auto self = world().split(world().rank(), 0, "self");
  const LockstepRuns runs = lockstep(alone, *self, config, world());
  EXPECT_GT(runs.candidate.buckets, 2) << "resnet-mini's gradients should travel in several buckets";
  expect_same_steps(runs, "resnet sync-BN dp=" + std::to_string(world().size()), kLr * 25, kResnetRelativeTolerance);
}

TEST(DataParallel, ResnetZeroOneAndTwoWithSgdEqualPlainDataParallel) {
  const plan::TrainConfig plain = config_from(resnet_yaml(world().size(), 0, "sync"));
  const LockstepRuns one = lockstep(plain, world(), config_from(resnet_yaml(world().size(), 1, "sync")), world());
  expect_same_steps(one, "resnet zero-1", kLr * 25, 1e-4);
  const auto n = static_cast<std::int64_t>(one.reference_initial.size());
  const std::int64_t shard = (n + world().size() - 1) / world().size();
  EXPECT_EQ(one.candidate.optimizer_bytes, 4 * std::min(shard, n - shard * world().rank()));  // one momentum buffer
  const LockstepRuns two = lockstep(plain, world(), config_from(resnet_yaml(world().size(), 2, "sync")), world());
  expect_same_steps(two, "resnet zero-2", kLr * 25, 1e-4);
  EXPECT_EQ(two.candidate.grads_bytes, 4 * shard);
}

// The bucket exchange alone, on both algorithms, with and without overlap: backward reports
// the gradients in pieces out of flat order (last layer first, uneven sizes, buckets of 16
// floats cutting through pieces); finish() leaves each element at (sum over ranks) · scale /
// ranks, bit for bit: the values are small integers, so every sum is exact, and the product is
// rounded once (float(sum · float(scale / ranks)), as a float multiply), whichever rank order
// the reduction took. Packing and unpacking go through the device copies the GPU path uses.
TEST(DataParallel, BucketsPackAndUnpackEveryPieceInPlace) {
  const int n = world().size();
  constexpr std::int64_t kCount = 1003;
  constexpr double kLocalScale = 0.5;
  const auto value = [](int rank, std::int64_t i) { return static_cast<float>((rank + 1) * (i % 7) - 3); };
  for (const char* algorithm : {"ring", "mpi"}) {
    for (bool overlap : {true, false}) {
      MemoryTracker tracker;
      std::vector<float> gradients(kCount);
      for (std::int64_t i = 0; i < kCount; ++i) gradients[static_cast<std::size_t>(i)] = value(world().rank(), i);
      BucketedAllReduce exchange(world(), gradients, 16 * sizeof(float), overlap, algorithm, tracker);
      EXPECT_EQ(tracker.usage().of(MemoryCategory::comm), static_cast<std::int64_t>(kCount * sizeof(float)));
      for (std::int64_t end = kCount, piece = 1; end > 0; piece = piece % 37 + 5) {  // last piece first
        const std::int64_t begin = std::max<std::int64_t>(0, end - piece);
        exchange.ready(begin, end - begin);
        end = begin;
      }
      exchange.finish(kLocalScale);
      const float scale = static_cast<float>(kLocalScale / n);
      std::int64_t wrong = 0;
      for (std::int64_t i = 0; i < kCount; ++i) {
        float sum = 0;
        for (int r = 0; r < n; ++r) sum += value(r, i);
        wrong += gradients[static_cast<std::size_t>(i)] != sum * scale;
      }
      EXPECT_EQ(wrong, 0) << algorithm << (overlap ? ", overlapped" : ", after backward");
      EXPECT_EQ(exchange.last_step().bytes, static_cast<std::int64_t>(kCount * sizeof(float)));
      EXPECT_GE(exchange.last_step().buckets, static_cast<int>(kCount / (16 + 41)));  // a bucket: 16 floats + a piece
    }
  }
}

// The bytes each rank sent in a step, counted as the ring algorithms hand them to MPI, are
// 2(n−1)/n·S for S bytes of gradients: bucketed ring all-reduces, or ZeRO-1's ring
// reduce-scatter plus all-gather (whose padded buffer adds at most n−1 floats to S). Exact up
// to the segments' rounding: at most n floats per bucket.
TEST(DataParallel, BytesSentPerStepAreTheRingVolume) {
  const int n = world().size();
  for (int zero : {0, 1}) {
    const plan::TrainConfig config = config_from(gpt_yaml(n, zero, 0.25, true));  // buckets of 256 KiB
    const Trained t = train(config, world());
    const double payload = static_cast<double>(t.parameters.size() * sizeof(float));
    const double analytic = 2.0 * (n - 1) / n * payload;
    for (std::size_t s = 0; s < t.bytes_sent.size(); ++s)
      EXPECT_NEAR(static_cast<double>(t.bytes_sent[s]), analytic, 4.0 * n * 8)
          << "zero " << zero << ", step " << s + 1 << ": S = " << payload << " bytes";
    if (world().rank() == 0)
      std::printf("zero %d, n %d: %lld bytes sent per step, analytic 2(n-1)/n*S = %.0f\n", zero, n,
                  static_cast<long long>(t.bytes_sent.back()), analytic);
  }
}

}  // namespace
}  // namespace sb::train
