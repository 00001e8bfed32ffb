// SPDX-License-Identifier: Apache-2.0
// Measured pipeline bubble next to the ideal (p − 1)/(m + p − 1): resnet-mini split into
// world-size stages balanced by measured unit times (or FLOPs, or a hand split), trained with
// GPipe and 1F1B for each micro-batch count, on synthetic images. Prints one row per
// (schedule, m): the ideal, the measured bubble fraction (mean over stages, and per stage), and
// the "modelled" one: the schedule simulated with each stage's measured forward and backward
// times and free messages, i.e. what the remaining stage imbalance alone explains. With --out,
// writes the rows as JSON. A driver, not a test: nothing is asserted, the figures depend on
// the machine and on what else runs on it.
//
//   mpirun -np 2 build/bench/bench_pipeline_bubble [--micro 8] [--m 1,2,4,8] [--steps 5]
//          [--balance measured|flops|<counts, e.g. 4,4>] [--out bubble.json]
// Threads per rank: SB_THREADS (default 1).
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/balanced_partition.hpp"
#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "measure/row_printer.hpp"
#include "measure/timing.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "optim/sgd.hpp"
#include "parallel/communicator.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/pipeline_executor.hpp"
#include "train/resnet_pipeline_stage.hpp"
#include "train/training_task.hpp"

namespace {

using sb::plan::PipelineSchedule;
using i64 = std::int64_t;

struct Options {
  i64 micro = 8;
  std::vector<i64> micro_batches{1, 2, 4, 8};
  int steps = 5;  // timed, after one warm-up step
  std::string balance = "measured";
  std::string out;
};

std::vector<i64> parse_list(const std::string& text) {
  std::vector<i64> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stoll(item));
  return values;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--micro") o.micro = std::stoll(value);
    else if (key == "--m") o.micro_batches = parse_list(value);
    else if (key == "--steps") o.steps = std::stoi(value);
    else if (key == "--balance") o.balance = value;
    else if (key == "--out") o.out = value;
    else throw sb::UserError("unknown option " + key + " (known: --micro, --m, --steps, --balance, --out)");
  }
  return o;
}

const sb::resnet::ResnetConfig& mini() {
  static const auto config = sb::resnet::resnet_config_by_name("resnet-mini");
  return config;
}

// Seconds of one forward + backward of each unit on `micro` images (median of 5, after one
// warm-up), each unit alone as a one-unit partition.
std::vector<double> measure_unit_seconds(i64 micro) {
  const auto units = sb::resnet::resnet_pipeline_units(mini());
  std::vector<double> seconds;
  for (i64 u = 0; u < static_cast<i64>(units.size()); ++u) {
    sb::MemoryTracker tracker;
    sb::resnet::ResnetModel model(mini(), micro, sb::kernels::Backend::cpu, tracker, {u, u + 1});
    model.init_weights(1);
    const sb::CounterRng rng(2, static_cast<std::uint64_t>(u));
    std::vector<float> input(static_cast<std::size_t>(micro * model.input_floats_per_image()));
    std::vector<float> doutput(static_cast<std::size_t>(micro * model.output_floats_per_image()));
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(rng.normal(i));
    for (std::size_t i = 0; i < doutput.size(); ++i) doutput[i] = static_cast<float>(rng.normal(input.size() + i));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(micro), 3);
    const std::function<void()> forward_backward = [&] {
      model.forward(0, input.data(), labels.data(), micro, true);
      model.backward(0, model.has_head() ? nullptr : doutput.data());
    };
    sb::measure::HostClock clock([] { Kokkos::fence(); });
    const std::vector<double> times =
        sb::measure::time_rounds(forward_backward, {.warmups = 1, .rounds = 5, .iterations = 1}, clock);
    seconds.push_back(sb::measure::statistics_of(times).median);
  }
  return seconds;
}

std::vector<i64> units_per_stage(const Options& o, sb::parallel::Communicator& world,
                                 std::vector<double>& unit_seconds) {
  const int p = world.size();
  if (o.balance == "flops") return sb::resnet::resnet_balanced_units_per_stage(mini(), p);
  if (o.balance != "measured") return parse_list(o.balance);
  unit_seconds.assign(sb::resnet::resnet_pipeline_units(mini()).size(), 0.0);
  if (world.rank() == 0) unit_seconds = measure_unit_seconds(o.micro);
  world.broadcast(unit_seconds.data(), static_cast<i64>(unit_seconds.size()), sb::parallel::DataType::f64, 0);
  return sb::balanced_contiguous_partition(unit_seconds, p);
}

// One (schedule, m) on the measurement harness: a warm-up step, then `steps` timed steps with the
// ranks aligned by a barrier before each. Returns this stage's medians over the timed steps.
struct StageFigures {
  double wall_s, compute_s, forward_s, backward_s, p2p_s, bubble_s, bubble_fraction, input_transfer_s,
      gradient_transfer_s;
  i64 peak_slots, peak_activation_bytes;
};

StageFigures run_case(const Options& o, sb::parallel::Communicator& world, const sb::resnet::ResnetPartition& partition,
                      PipelineSchedule schedule, i64 m) {
  const int p = world.size(), s = world.rank();
  sb::MemoryTracker tracker;
  sb::resnet::ResnetModel model(mini(), o.micro, sb::kernels::Backend::cpu, tracker, partition,
                                sb::plan::pipeline_peak_in_flight(schedule, p, s, m));
  model.init_weights(7);
  sb::optim::Sgd sgd(model.parameter_slices(), {}, sb::kernels::Backend::cpu, tracker);
  sb::train::ResnetPipelineStage stage(model, o.micro);
  sb::train::PipelineExecutor executor(world, stage, schedule, m, tracker);
  const sb::CounterRng rng(9, 0);
  std::vector<float> images(static_cast<std::size_t>(m * o.micro * 28 * 28));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(m * o.micro));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(rng.normal(i));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(rng.below(images.size() + i, 10));
  stage.set_batch(images.data(), labels.data());
  using Figures = sb::train::PipelineStepFigures;
  const std::function<Figures()> step = [&] {
    const Figures f = executor.run_step();
    sb::train::average_accumulated_gradients(sb::kernels::kernels_for(sb::kernels::Backend::cpu), model.gradients_flat(), m);
    sgd.clip_and_step(0.01);
    return f;
  };
  const std::vector<Figures> steps = sb::measure::collect_rounds<Figures>({.warmups = 1, .rounds = o.steps}, step, [&] {
    model.zero_grad();
    world.barrier();
  });
  const auto median = [&](auto field) { return sb::measure::statistics_of(std::span<const Figures>(steps), field).median; };
  StageFigures r{};
  r.wall_s = median(&Figures::wall_s);
  r.compute_s = median(&Figures::compute_s);
  r.forward_s = median(&Figures::forward_s);
  r.backward_s = median(&Figures::backward_s);
  r.p2p_s = median(&Figures::p2p_s);
  r.bubble_s = median(&Figures::bubble_s);
  r.bubble_fraction = median(&Figures::bubble_fraction);
  if (!steps.empty()) {
    r.peak_slots = steps.back().peak_slots_in_use;
    r.peak_activation_bytes = steps.back().peak_activation_bytes;
  }
  r.input_transfer_s = executor.input_transfer_s();
  r.gradient_transfer_s = executor.gradient_transfer_s();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  try {
    const Options o = parse(argc, argv);
    const char* env = std::getenv("SB_THREADS");
    sb::ParallelRuntime runtime(env && std::atoi(env) > 0 ? std::atoi(env) : 1);
    auto world = sb::parallel::make_mpi_world_communicator();
    const int p = world->size(), s = world->rank();
    std::vector<double> unit_seconds;
    const std::vector<i64> counts = units_per_stage(o, *world, unit_seconds);
    const auto partitions = sb::resnet::resnet_stage_partitions(mini(), counts);
    SB_USER_CHECK(static_cast<int>(partitions.size()) == p, "the split has {} stages for {} ranks", partitions.size(), p);
    nlohmann::json out{{"host", sb::host_name()}, {"ranks", p}, {"threads_per_rank", runtime.threads()},
                       {"micro_batch_images", o.micro}, {"balance", o.balance}, {"units_per_stage", counts},
                       {"unit_seconds", unit_seconds}, {"rows", nlohmann::json::array()}};
    const sb::measure::RowPrinter printer(stdout, {{"sched", 6, 0, true}, {"m", 3}, {"ideal", 7, 3},
                                                   {"modelled", 9, 3}, {"measured", 9, 3}, {"max-dev", 9, 3}});
    if (s == 0) {
      std::printf("resnet-mini, %d stages, units per stage [", p);
      for (std::size_t i = 0; i < counts.size(); ++i) std::printf("%s%lld", i ? ", " : "", static_cast<long long>(counts[i]));
      std::printf("] (balance: %s), %lld images per micro-batch, %d thread(s) per rank, median of %d steps\n",
                  o.balance.c_str(), static_cast<long long>(o.micro), runtime.threads(), o.steps);
      std::printf("%s   per stage: bubble fraction (compute s, p2p s, wall s)\n", printer.header_line().c_str());
    }
    for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
      for (i64 m : o.micro_batches) {
        const StageFigures mine = run_case(o, *world, partitions[static_cast<std::size_t>(s)], schedule, m);
        std::vector<StageFigures> all(static_cast<std::size_t>(p));
        world->all_gather(&mine, all.data(), sizeof(StageFigures), sb::parallel::DataType::u8);
        if (s != 0) continue;
        const double ideal = sb::plan::pipeline_ideal_bubble_fraction(p, m);
        std::vector<double> forward_time, backward_time;  // per micro-batch
        for (const auto& f : all) {
          forward_time.push_back(f.forward_s / static_cast<double>(m));
          backward_time.push_back(f.backward_s / static_cast<double>(m));
        }
        const auto modelled = sb::plan::simulate_pipeline(schedule, m, forward_time, backward_time);
        double mean = 0, mean_modelled = 0, deviation = 0;
        for (std::size_t i = 0; i < all.size(); ++i) {
          mean += all[i].bubble_fraction / p;
          mean_modelled += modelled.idle_fraction[i] / p;
          deviation = std::max(deviation, std::abs(all[i].bubble_fraction - ideal));
        }
        std::printf("%s  ", printer.line({std::string(sb::plan::to_string(schedule)), m, ideal, mean_modelled, mean,
                                          deviation}).c_str());
        nlohmann::json row{{"schedule", sb::plan::to_string(schedule)}, {"m", m}, {"ideal_bubble_fraction", ideal},
                           {"modelled_bubble_fraction", mean_modelled}, {"mean_bubble_fraction", mean},
                           {"stages", nlohmann::json::array()}};
        for (const auto& f : all) {
          std::printf(" %.3f (%.4f, %.4f, %.4f)", f.bubble_fraction, f.compute_s, f.p2p_s, f.wall_s);
          row["stages"].push_back({{"bubble_fraction", f.bubble_fraction}, {"wall_s", f.wall_s},
                                   {"compute_s", f.compute_s}, {"forward_s", f.forward_s}, {"backward_s", f.backward_s}, {"p2p_s", f.p2p_s}, {"bubble_s", f.bubble_s},
                                   {"input_transfer_s", f.input_transfer_s},
                                   {"gradient_transfer_s", f.gradient_transfer_s}, {"peak_slots", f.peak_slots},
                                   {"peak_activation_bytes", f.peak_activation_bytes}});
        }
        std::printf("\n");
        out["rows"].push_back(row);
      }
    }
    if (s == 0 && !o.out.empty()) std::ofstream(o.out) << out.dump(2) << "\n";
    world.reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_pipeline_bubble: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks may be waiting for this one
  }
  MPI_Finalize();
  return 0;
}
