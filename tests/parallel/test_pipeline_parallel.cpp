// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism trains the model one rank trains: resnet-mini split into p = world-size
// stages (FLOP-balanced), 5 steps of SGD with momentum and weight decay on synthetic 28×28
// images, each step m = 1, 2, 4 micro-batches of 2 images accumulated, GPipe and 1F1B, against
// the unsplit model that every rank trains itself on the same micro-batches (forward, backward
// per micro-batch, gradients averaged over m). Both sides run the same kernels on the same
// tensors, and both schedules accumulate the micro-batches in order (pipeline_schedule.hpp), so
// the documented tolerance only guards against a reordered sum: every parameter and running
// statistic within 1e-6 of its tensor's largest value, every step's loss within 1e-6
// relative. The test prints the largest differences. Also checked: the activation slots the
// executor used at once (1F1B: min(p − s, m), so the first stage ≤ p; GPipe: m), the tracked
// activation bytes that follow from them, the bytes sent, and the timeline's identities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "mpi_test_environment.hpp"
#include "one_thread_runtime.hpp"
#include "optim/sgd.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/pipeline_executor.hpp"
#include "train/resnet_pipeline_stage.hpp"
#include "train/training_task.hpp"

namespace sb::train {
namespace {

using parallel::testing::world;

constexpr int kSteps = 5;
constexpr std::int64_t kMicro = 2;  // images per micro-batch
constexpr std::uint64_t kSeed = 41;
constexpr double kLr = 0.05;
constexpr double kTolerance = 1e-6;

optim::SgdConfig sgd_config() {
  optim::SgdConfig c;
  c.lr = kLr;
  c.momentum = 0.9;
  c.weight_decay = 5e-4;
  return c;
}

const resnet::ResnetConfig& mini() {
  static const resnet::ResnetConfig config = resnet::resnet_config_by_name("resnet-mini");
  return config;
}

// Step `step`'s batch of m micro-batches: standard normal pixels, labels below 10.
struct Batch {
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};
Batch batch_of(int step, std::int64_t m) {
  const CounterRng rng(kSeed, static_cast<std::uint64_t>(step));
  Batch b;
  b.images.resize(static_cast<std::size_t>(m * kMicro * 28 * 28));
  b.labels.resize(static_cast<std::size_t>(m * kMicro));
  for (std::size_t i = 0; i < b.images.size(); ++i) b.images[i] = static_cast<float>(rng.normal(i));
  for (std::size_t i = 0; i < b.labels.size(); ++i)
    b.labels[i] = static_cast<std::int32_t>(rng.below(b.images.size() + i, 10));
  return b;
}

// Named copies of a model's parameters and running statistics.
struct Trained {
  std::map<std::string, std::vector<float>> tensors;
  std::vector<double> losses;
};
void keep_tensors(resnet::ResnetModel& model, Trained& t) {
  for (const auto& v : model.parameter_views()) t.tensors[v.name].assign(v.param, v.param + v.numel);
  for (const auto& v : model.statistics_views()) t.tensors[v.name].assign(v.values, v.values + v.numel);
}

// The unsplit model on this rank alone: gradient accumulation over the same micro-batches.
Trained train_unsplit(std::int64_t m) {
  MemoryTracker tracker;
  resnet::ResnetModel model(mini(), kMicro, kernels::Backend::cpu, tracker);
  model.init_weights(kSeed);
  optim::Sgd sgd(model.parameter_slices(), sgd_config(), kernels::Backend::cpu, tracker);
  Trained t;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of(step, m);
    model.zero_grad();
    double loss = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      loss += model.forward(b.images.data() + i * kMicro * 28 * 28, b.labels.data() + i * kMicro, kMicro, true);
      model.backward();
    }
    average_accumulated_gradients(kernels::kernels_for(kernels::Backend::cpu), model.gradients_flat(), m);
    sgd.clip_and_step(kLr);
    t.losses.push_back(loss / static_cast<double>(m));
  }
  keep_tensors(model, t);
  return t;
}

const Trained& unsplit(std::int64_t m) {
  static std::map<std::int64_t, Trained> cache;
  if (!cache.contains(m)) cache[m] = train_unsplit(m);
  return cache[m];
}

struct PipelineRun {
  Trained trained;
  std::vector<PipelineStepFigures> steps;
  std::int64_t slots = 0, slot_bytes = 0, activation_bytes = 0, input_bytes = 0, output_bytes = 0;
  resnet::ResnetPartition partition;
};

// This rank's stage of the FLOP-balanced split, trained kSteps steps through the executor.
PipelineRun train_pipeline(plan::PipelineSchedule schedule, std::int64_t m) {
  const int p = world().size(), s = world().rank();
  const auto counts = resnet::resnet_balanced_units_per_stage(mini(), p);
  PipelineRun run;
  run.partition = resnet::resnet_stage_partitions(mini(), counts)[static_cast<std::size_t>(s)];
  run.slots = plan::pipeline_peak_in_flight(schedule, p, s, m);
  MemoryTracker tracker;
  resnet::ResnetModel model(mini(), kMicro, kernels::Backend::cpu, tracker, run.partition, run.slots);
  model.init_weights(kSeed);
  run.activation_bytes = tracker.usage().of(MemoryCategory::activations);
  optim::Sgd sgd(model.parameter_slices(), sgd_config(), kernels::Backend::cpu, tracker);
  ResnetPipelineStage stage(model, kMicro);
  run.slot_bytes = stage.slot_activation_bytes();
  run.input_bytes = stage.input_bytes();
  run.output_bytes = stage.output_bytes();
  PipelineExecutor executor(world(), stage, schedule, m, tracker);
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of(step, m);
    stage.set_batch(b.images.data(), b.labels.data());
    model.zero_grad();
    world().barrier();
    run.steps.push_back(executor.run_step());
    average_accumulated_gradients(kernels::kernels_for(kernels::Backend::cpu), model.gradients_flat(), m);
    sgd.clip_and_step(kLr);
    double loss = run.steps.back().loss;  // the last stage's
    world().broadcast(&loss, 1, parallel::DataType::f64, p - 1);
    run.trained.losses.push_back(loss);
  }
  keep_tensors(model, run.trained);
  return run;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

void check_schedule(plan::PipelineSchedule schedule) {
  const int p = world().size(), s = world().rank();
  for (std::int64_t m : {1, 2, 4}) {
    const std::string what = std::string(to_string(schedule)) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                             " stage " + std::to_string(s);
    const PipelineRun run = train_pipeline(schedule, m);
    const Trained& want = unsplit(m);

    // the same training
    double worst = 0;
    for (const auto& [name, values] : run.trained.tensors) {
      ASSERT_TRUE(want.tensors.contains(name)) << what << ": " << name;
      const double difference = relative_difference(values, want.tensors.at(name));
      worst = std::max(worst, difference);
      EXPECT_LE(difference, kTolerance) << what << ": " << name;
    }
    double worst_loss = 0;
    for (int step = 0; step < kSteps; ++step) {
      const double difference = std::fabs(run.trained.losses[step] - want.losses[step]) / std::fabs(want.losses[step]);
      worst_loss = std::max(worst_loss, difference);
      EXPECT_LE(difference, kTolerance) << what << ": loss of step " << step + 1;
    }
    // every tensor of the model lives on exactly one stage
    const auto tensors = world().all_reduce_value(static_cast<std::int64_t>(run.trained.tensors.size()));
    EXPECT_EQ(tensors, static_cast<std::int64_t>(want.tensors.size())) << what;
    worst = world().all_reduce_value(worst, parallel::ReduceOp::max);
    worst_loss = world().all_reduce_value(worst_loss, parallel::ReduceOp::max);
    if (s == 0)
      std::printf("%s p=%d m=%lld: largest relative tensor difference %.3g, loss %.3g\n", to_string(schedule).data(), p,
                  static_cast<long long>(m), worst, worst_loss);

    // memory: the slots the schedule needs, each one micro-batch's tracked activations
    const std::int64_t expected_slots = schedule == plan::PipelineSchedule::gpipe ? m : std::min<std::int64_t>(p - s, m);
    EXPECT_EQ(run.slots, expected_slots) << what;
    for (const PipelineStepFigures& f : run.steps) {
      EXPECT_EQ(f.peak_slots_in_use, expected_slots) << what;
      EXPECT_EQ(f.peak_activation_bytes, expected_slots * run.slot_bytes) << what;
      if (s == 0 && schedule == plan::PipelineSchedule::one_f_one_b) EXPECT_LE(f.peak_slots_in_use, p) << what;
      // bytes: one activation forward, one gradient back, per micro-batch and neighbour
      EXPECT_EQ(f.bytes_sent, m * (run.output_bytes + run.input_bytes)) << what;
      EXPECT_EQ(f.bytes_received, f.bytes_sent) << what;
      // the timeline's identities
      EXPECT_EQ(f.ops.size(), static_cast<std::size_t>(2 * m)) << what;
      EXPECT_GT(f.forward_s, 0) << what;
      EXPECT_GT(f.backward_s, 0) << what;
      EXPECT_GE(f.wall_s(), f.compute_s() + f.wait_s - 1e-9) << what;
      EXPECT_LE(f.p2p_s, f.wait_s + 1e-12) << what;
      EXPECT_GE(f.bubble_s(), -1e-9) << what;
    }
    EXPECT_EQ(run.activation_bytes,
              resnet::resnet_activation_bytes(mini(), kMicro, run.partition, run.slots) +
                  (s + 1 == p ? 4 * kMicro * run.slots : 0))
        << what;
  }
}

TEST(PipelineParallel, GpipeTrainsTheSameModelAsOneRank) { check_schedule(plan::PipelineSchedule::gpipe); }
TEST(PipelineParallel, OneFOneBTrainsTheSameModelAsOneRank) { check_schedule(plan::PipelineSchedule::one_f_one_b); }

// The first stage's tracked activation memory: GPipe grows with m, 1F1B stops at p slots.
TEST(PipelineParallel, FirstStageActivationMemoryGrowsWithMUnderGpipeOnly) {
  const int p = world().size();
  const auto partition = resnet::resnet_stage_partitions(mini(), resnet::resnet_balanced_units_per_stage(mini(), p))[0];
  const auto bytes = [&](plan::PipelineSchedule schedule, std::int64_t m) {
    return resnet::resnet_activation_bytes(mini(), kMicro, partition, plan::pipeline_peak_in_flight(schedule, p, 0, m));
  };
  const std::int64_t slot = resnet::resnet_slot_activation_bytes(mini(), kMicro, partition);
  for (std::int64_t m : {1, 2, 4, 8, 16}) {
    EXPECT_EQ(bytes(plan::PipelineSchedule::gpipe, m) - bytes(plan::PipelineSchedule::gpipe, 1), (m - 1) * slot);
    EXPECT_EQ(bytes(plan::PipelineSchedule::one_f_one_b, m) - bytes(plan::PipelineSchedule::one_f_one_b, 1),
              (std::min<std::int64_t>(m, p) - 1) * slot);
  }
}

}  // namespace
}  // namespace sb::train
