// The training loop on every rank: sample this rank's share, forward, backward, exchange the
// gradients (data parallel), clip, step, evaluate on rank 0, record on rank 0; resume from and
// write checkpoints (train/checkpoint.hpp) at step boundaries.
#include "train/trainer.hpp"

#include <Kokkos_Core.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <cmath>
#include <optional>
#include <span>
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/check.hpp"
#include "core/statistics.hpp"
#include "core/memory.hpp"
#include "io/results_file.hpp"
#include "kernels/kernels.hpp"
#include "metrics/run_context.hpp"
#include "metrics/timeline.hpp"
#include "parallel/communicator.hpp"
#include "parallel/fault.hpp"
#include "parallel/gather_text.hpp"
#include "parallel/process_grid.hpp"
#include "train/checkpoint.hpp"
#include "train/distributed_step.hpp"
#include "plan/run_plan.hpp"
#include "train/non_finite_check.hpp"
#include "train/parameter_constraints.hpp"
#include "runtime/device_runtime.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/world_communicator.hpp"
#include "train/progress.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

using parallel::comm_clock_seconds;

// device cuda: the GPT language model, data parallel through the communicator's own all-reduce
// (NCCL), tensor parallel with its activations' all-reduces on the GPU (NCCL), pipeline
// parallel with each message staged through host memory (MPI), the optimizer state whole on
// each rank. What needs host memory or another model is refused.
void check_supported_on_cuda(const plan::TrainConfig& c) {
  SB_USER_CHECK(!plan::trains_resnet(c), "{}: model {} on device cuda: the GPU trainer runs the GPT language model so far; "
                "train ResNets with device: cpu", c.source, c.model.name);
  SB_USER_CHECK(c.data.dataset == "sotu", "{}: data.dataset {} on device cuda: the GPU trainer runs the GPT language "
                "model on sotu so far (sequence classification trains with device: cpu)", c.source, c.data.dataset);
  SB_USER_CHECK(c.strategy.zero == 0, "{}: strategy.zero {} on device cuda: ZeRO-1's ring exchange runs in host "
                "memory; use zero 0 (or device: cpu)", c.source, c.strategy.zero);
  SB_USER_CHECK(c.strategy.dp == 1 || c.strategy.allreduce == "mpi",
                "{}: strategy.allreduce {} on device cuda: the ring all-reduce adds in host memory; set "
                "strategy.allreduce: mpi (the communicator's own all-reduce, NCCL on GPUs)",
                c.source, c.strategy.allreduce);
  SB_USER_CHECK(c.finetune.from.empty() && c.prune.pattern.empty() && c.distill.teacher.empty(),
                "{}: finetune, prune and distill on device cuda: their masks and teacher run in host memory; "
                "use device: cpu", c.source);
}

// Rejects what this trainer cannot run, before anything is allocated or written.
void check_supported(const plan::TrainConfig& c) {
  SB_USER_CHECK(c.strategy.interleave == 1,
                "{}: strategy.interleave {} (virtual pipeline stages) is modelled by predict and plan; the trainer "
                "runs interleave 1",
                c.source, c.strategy.interleave);
  SB_USER_CHECK(!c.strategy.sequence_parallel,
                "{}: strategy.sequence_parallel is modelled by predict and plan; the trainer runs without it",
                c.source);
  SB_USER_CHECK(c.strategy.zero == 0 || c.strategy.pp == 1,
                "{}: strategy.zero 1 shards the optimizer over data-parallel ranks of one stage; with pp {} use "
                "zero 0",
                c.source, c.strategy.pp);
  SB_USER_CHECK(c.strategy.zero <= 1,
                "{}: the trainer shards optimizer state (strategy.zero 1) but not gradients or parameters; "
                "zero {} is for the cost model (predict/plan)",
                c.source, c.strategy.zero);
  SB_USER_CHECK(c.precision.main_grads == "fp32",
                "{}: the trainer keeps fp32 main gradients; precision.main_grads '{}' is for the cost model "
                "(predict/plan)", c.source, c.precision.main_grads);
  SB_USER_CHECK(c.strategy.recompute == "none", "{}: strategy.recompute '{}' is not available in the trainer yet",
                c.source, c.strategy.recompute);
  if (c.device == "cuda") check_supported_on_cuda(c);
}

// SB_INJECT_FAILURE="RANK:STEP:error|kill|usr1|term" makes that rank fail at the start of that
// step (1-based): an exception, SIGKILL of its own process, or the scheduler's SIGUSR1 / SIGTERM
// sent to itself. For the tests of failure handling and checkpoint-on-signal.
void inject_failure_if_asked(int rank, std::int64_t step) {
  const char* spec = std::getenv("SB_INJECT_FAILURE");
  if (!spec || !*spec) return;
  int at_rank = -1;
  long long at_step = -1;
  char mode[16] = {};
  SB_USER_CHECK(std::sscanf(spec, "%d:%lld:%15s", &at_rank, &at_step, mode) == 3,
                "SB_INJECT_FAILURE '{}' is not RANK:STEP:error|kill|usr1|term", spec);
  if (at_rank != rank || at_step != step) return;
  if (std::string_view(mode) == "kill") std::raise(SIGKILL);
  if (std::string_view(mode) == "usr1") return static_cast<void>(std::raise(SIGUSR1));
  if (std::string_view(mode) == "term") return static_cast<void>(std::raise(SIGTERM));
  throw Error(fmt::format("injected failure (SB_INJECT_FAILURE={}) at step {}", spec, step));
}

// The run's context with the device's part: the GPU and its driver (rank 0's), and how step
// times were taken. The host clock times every step; on cuda the step waits for the GPU
// (cudaDeviceSynchronize) before each of its timestamps, so the time is the GPU's work too.
io::Attributes run_context_on(Device device, io::Attributes context) {
  const auto set = [&context](const std::string& name, io::AttrValue value) {
    for (auto& [key, old] : context)
      if (key == name) return static_cast<void>(old = std::move(value));
    context.emplace_back(name, std::move(value));
  };
  if (device == Device::cuda) {
    const GpuDescription gpu = current_gpu_description();
    set("gpu_model", gpu.model);
    set("driver", gpu.driver);
    set("step_timing", std::string("host clock after cudaDeviceSynchronize"));
  } else {
    set("step_timing", std::string("host clock after Kokkos::fence"));
  }
  return context;
}

// Every rank's timeline rows (one per step; every rank ran the same steps), gathered at the end
// of the run so that timing never waits on a per-step collective; step-major, as the table.
std::vector<io::TimelineRow> gather_timeline(parallel::Communicator& world, const std::vector<io::TimelineRow>& mine) {
  static_assert(std::is_trivially_copyable_v<io::TimelineRow>);
  const auto steps = mine.size(), ranks = static_cast<std::size_t>(world.size());
  std::vector<io::TimelineRow> by_rank(steps * ranks);
  world.all_gather(mine.data(), by_rank.data(), static_cast<std::int64_t>(steps * sizeof(io::TimelineRow)),
                   parallel::DataType::u8);
  std::vector<io::TimelineRow> rows;
  rows.reserve(by_rank.size());
  for (std::size_t s = 0; s < steps; ++s)
    for (std::size_t r = 0; r < ranks; ++r) rows.push_back(by_rank[r * steps + s]);
  return rows;
}

// Per-rank medians over the steady steps (the first step pays page faults and thread start).
// idle is the wait for the slowest rank: max over ranks of compute − this rank's compute in
// the same step; it is taken out of comm, since a blocking collective waits for the last rank.
std::vector<io::RankRow> rank_rows(const std::vector<io::TimelineRow>& timeline, const parallel::ProcessGrid& grid) {
  const auto ranks = static_cast<std::size_t>(grid.dp() * grid.tp() * grid.pp());
  const std::size_t steps = timeline.size() / ranks, first = steps > 1 ? 1 : 0;
  const auto at = [&](std::size_t step, std::size_t rank) -> const io::TimelineRow& {
    return timeline[step * ranks + rank];
  };
  std::vector<io::RankRow> rows;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::vector<double> step_s, compute_s, comm_s, bubble_s, idle_s;
    for (std::size_t s = first; s < steps; ++s) {
      double slowest = 0;
      for (std::size_t q = 0; q < ranks; ++q) slowest = std::max(slowest, at(s, q).compute_s);
      const io::TimelineRow& t = at(s, r);
      const double idle = slowest - t.compute_s;
      step_s.push_back(t.step_time_s);
      compute_s.push_back(t.compute_s);
      comm_s.push_back(std::max(0.0, t.tp_comm_s + t.p2p_s + t.dp_comm_s - idle));
      bubble_s.push_back(t.bubble_s);
      idle_s.push_back(idle);
    }
    const auto [dp_rank, tp_rank, pp_rank] = grid.coordinates_of(static_cast<int>(r));
    rows.push_back({.rank = static_cast<std::int64_t>(r), .dp_rank = dp_rank, .tp_rank = tp_rank,
                    .pp_rank = pp_rank, .step_time_s = median(step_s), .compute_s = median(compute_s),
                    .comm_s = median(comm_s), .bubble_s = median(bubble_s), .idle_s = median(idle_s)});
  }
  return rows;
}

// Every rank's peak tracked bytes per category, gathered.
std::vector<io::MemoryRow> memory_rows(parallel::Communicator& world, const MemoryTracker& tracker) {
  const auto& usage = tracker.usage();
  const std::vector<std::int64_t> mine = {world.rank(),
                                          usage.peak_of(MemoryCategory::params),
                                          usage.peak_of(MemoryCategory::grads),
                                          usage.peak_of(MemoryCategory::optimizer),
                                          usage.peak_of(MemoryCategory::activations),
                                          usage.peak_of(MemoryCategory::workspace),
                                          usage.peak_of(MemoryCategory::comm),
                                          usage.total_peak,
                                          peak_rss_bytes()};
  const auto fields = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(world.size()));
  world.all_gather(mine.data(), all.data(), fields, parallel::DataType::i64);
  std::vector<io::MemoryRow> rows;
  for (int r = 0; r < world.size(); ++r) {
    const std::int64_t* m = all.data() + r * fields;
    rows.push_back({.rank = m[0], .params = m[1], .grads = m[2], .optimizer = m[3], .activations = m[4],
                    .workspace = m[5], .comm = m[6], .peak_tracked = m[7], .peak_rss = m[8]});
  }
  return rows;
}

// The prediction's errors against the run: signed percentages, (predicted − measured) /
// measured. Memory compares each tracked category of the rank that holds the most in them (the
// prediction is of the most loaded rank); error_memory_pct is the category furthest off.
io::Attributes prediction_errors(const plan::RunPrediction& p, const TrainOutcome& outcome,
                                 std::span<const io::MemoryRow> memory) {
  const auto held = [](const io::MemoryRow& r) { return r.params + r.grads + r.optimizer + r.activations; };
  const io::MemoryRow& heaviest =
      *std::max_element(memory.begin(), memory.end(), [&](const auto& a, const auto& b) { return held(a) < held(b); });
  const auto error_pct = [](double predicted, double measured) {
    return measured > 0 ? 100.0 * (predicted - measured) / measured
                        : (predicted == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  };
  const std::array<std::pair<const char*, double>, 4> categories = {
      {{"params", error_pct(p.memory.params, static_cast<double>(heaviest.params))},
       {"grads", error_pct(p.memory.grads, static_cast<double>(heaviest.grads))},
       {"optimizer", error_pct(p.memory.optimizer, static_cast<double>(heaviest.optimizer))},
       {"activations", error_pct(p.memory.activations, static_cast<double>(heaviest.activations))}}};
  double worst = 0;
  io::Attributes attrs = {{"error_step_time_pct", error_pct(p.step_time_s, outcome.step_time_median_s)}};
  for (const auto& [name, error] : categories) {
    attrs.emplace_back(fmt::format("error_{}_pct", name), error);
    if (std::fabs(error) > std::fabs(worst)) worst = error;
  }
  attrs.emplace_back("error_memory_pct", worst);
  attrs.emplace_back("measured_rank", heaviest.rank);
  return attrs;
}

// /runs/<id>/compression after compress.quantize: int8. The metric is the test accuracy for
// images and the held-out loss (nats/byte) for text; throughputs are evaluation forwards.
io::Attributes compression_attributes(const compress::QuantizationReport& r, std::int64_t calibration_batches,
                                      bool text) {
  const std::string metric = text ? "heldout_loss" : "accuracy";
  io::Attributes attrs{{"quantize", std::string("int8")},
                       {"calibration_batches", calibration_batches},
                       {"weight_bytes_fp32", r.weight_bytes_fp32},
                       {"weight_bytes_int8", r.weight_bytes_int8},
                       {"weight_bytes_ratio", static_cast<double>(r.weight_bytes_fp32) /
                                                  static_cast<double>(r.weight_bytes_int8)},
                       {"params_bytes_int8_in_memory", r.int8_params_in_memory},
                       {metric + "_fp32", r.fp32_metric},
                       {metric + "_int8", r.int8_metric},
                       {"samples_per_s_fp32", r.fp32_samples_per_s},
                       {"samples_per_s_int8", r.int8_samples_per_s}};
  if (text) {
    attrs.emplace_back("tokens_per_s_fp32", r.fp32_tokens_per_s);
    attrs.emplace_back("tokens_per_s_int8", r.int8_tokens_per_s);
  }
  return attrs;
}

}  // namespace

TrainOutcome run_training(const plan::TrainConfig& config, const std::filesystem::path& out, const std::string& run_id,
                          bool append, const std::filesystem::path& trace, const plan::RunPrediction* prediction) {
  // other runs' checkpoints this one starts from or learns from, as files (run:<id> resolved)
  plan::TrainConfig c = config;
  if (!c.finetune.from.empty()) c.finetune.from = checkpoint_source(c.finetune.from, out).string();
  if (!c.distill.teacher.empty()) c.distill.teacher = checkpoint_source(c.distill.teacher, out).string();
  // ---- everything that can fail on user input, before any file is written ----
  const plan::RunPlan run_plan = plan::runnable_plan(c);  // what predict predicts for this case
  check_supported(c);
  const auto backend = kernels::parse_backend(c.device == "cuda" ? "cuda" : "cpu");
  kernels::kernels_for(backend);  // "not compiled: cuda" before any work
  const Device device = kernels::memory_device(backend);
  // on cuda: this rank's GPU chosen, then NCCL around MPI; every tensor below lives on it
  const std::unique_ptr<parallel::Communicator> world = make_world_communicator(device, c.source);
  SB_USER_CHECK(world->size() == c.strategy.world_size(),
                "{}: the strategy needs {} ranks (dp×tp×pp) but the MPI world has {}; launch with mpirun -np {}",
                c.source, c.strategy.world_size(), world->size(), c.strategy.world_size());
  const int rank = world->rank();
  const bool root = rank == 0;
  const std::int64_t dp = c.strategy.dp;
  const int threads = c.threads > 0 ? static_cast<int>(c.threads)
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ParallelRuntime runtime(threads);
  MemoryTracker tracker;
  parallel::ProcessGrid grid(*world, static_cast<int>(dp), static_cast<int>(c.strategy.tp),
                            static_cast<int>(c.strategy.pp));
  const std::unique_ptr<TrainingTask> task = make_training_task(c, run_plan, backend, tracker, grid);

  DistributedStep distributed(c, *task, grid, backend, tracker);  // broadcasts dp rank 0's weights
  const std::int64_t steps = c.epochs > 0 ? c.epochs * task->steps_per_epoch() : c.steps;
  const std::int64_t eval_every =
      c.eval_every > 0 ? c.eval_every : (c.epochs > 0 ? task->steps_per_epoch() : steps);
  const double flops_per_step = task->flops_per_step();
  const std::int64_t tokens_per_step = task->tokens_per_step();
  Checkpointer checkpointer(c, checkpoint_path_of(c, out, run_id), *world, grid, *task, distributed);
  const std::int64_t first_step = checkpointer.resume(steps);  // 0, or the steps a checkpoint holds
  // finetune.from's weights (unless resuming), the frozen backbone and the pruning mask
  std::optional<ParameterConstraints> constraints;
  if (ParameterConstraints::wanted(c)) {
    constraints.emplace(c, *task, first_step == 0);
    distributed.set_parameter_constraints(&*constraints);
  }

  // ---- the result file, on rank 0: status reads "interrupted" until finish() ----
  std::optional<io::ResultsFile> file;
  std::optional<io::RunWriter> run;
  const io::Attributes context = run_context_on(device, metrics::collect_run_context(threads, MPI_COMM_WORLD));
  if (root) {
    file.emplace(append ? io::ResultsFile::open_or_create(out) : io::ResultsFile::create(out));
    io::Attributes attrs = {
        {"config_yaml", c.yaml}, {"model", task->model_name()}, {"dataset", task->dataset_name()},
        {"device", c.device}, {"precision", c.precision.dtype}, {"dp", c.strategy.dp},
        {"tp", c.strategy.tp}, {"pp", c.strategy.pp}, {"micro_batches", run_plan.micro_batches},
        {"micro_batch", run_plan.micro_batch}, {"stages", run_plan.stages}, {"stage_rule", run_plan.stage_rule},
        {"schedule", c.strategy.schedule}, {"zero", c.strategy.zero},
        {"world_size", c.strategy.world_size()}, {"global_batch", c.global_batch}, {"seq_len", task->seq_len()},
        {"started_utc", metrics::utc_now_iso8601()}, {"git_sha", std::string(SB_GIT_SHA)},
        {"resumed_from_step", first_step}};
    run.emplace(file->begin_run(run_id, attrs));
    if (prediction) run->write_prediction(prediction->attributes);
  }
  try {
    if (root) run->write_context(context);
    ProgressLine progress(run_id, steps, c.log_every, root, tokens_per_step > 0 ? "tok/s" : "samples/s");
    std::vector<io::TimelineRow> my_timeline;
    std::vector<parallel::Communicator*> communicators = grid.sub_communicators();
    communicators.push_back(world.get());
    std::vector<double> overlap_fractions;
    std::int64_t exchanged_bytes = 0;
    std::vector<double> bytes_sent;
    metrics::Timeline timeline;
    TrainOutcome outcome;
    auto record_eval = [&](std::int64_t step) {
      const double t0 = comm_clock_seconds();
      // every replica holds the same weights: replica 0's ranks evaluate, rank 0 records
      std::vector<EvalResult> results;
      if (grid.dp_rank() == 0) results = task->evaluate();
      if (root) {
        std::string line = fmt::format("eval at step {}:", step);
        for (const EvalResult& e : results) {
          run->append_eval({step, e.split, e.loss, e.accuracy});
          line += fmt::format(" {} loss {:.4f}, accuracy {:.2f}%;", e.split, e.loss, 100 * e.accuracy);
          if (e.split != "train") {  // the held-out (text) or test (images) figure is the headline
            outcome.final_heldout_loss = e.loss;
            outcome.final_heldout_accuracy = e.accuracy;
          }
        }
        line.pop_back();
        progress.message(line);
      }
      world->barrier();  // the other ranks wait here, not inside the next step's collectives
      timeline.add("evaluation", "eval", t0, comm_clock_seconds() - t0, step);
    };

    // the starting point of a fine-tuning run (pruned, before any step): eval row at step 0
    if (constraints && first_step == 0) record_eval(0);
    world->barrier();
    const double origin_s = comm_clock_seconds();
    for (std::int64_t step = first_step; step < steps; ++step) {
      std::vector<std::size_t> first_record;
      for (const parallel::Communicator* comm : communicators) first_record.push_back(comm->stats().records().size());
      inject_failure_if_asked(rank, step + 1);
      const StepResult r = distributed.run(step, steps);
      const double loss = r.loss, step_s = r.step_s(), compute_s = r.compute_s(), comm_s = r.comm_s(),
                   optimizer_s = r.optimizer_s();
      const GradientExchangeFigures& exchange = r.exchange;
      stop_if_non_finite(c, step + 1, loss, r.grad_norm, distributed.scales_loss(), *task, *world, grid.pp_rank());
      my_timeline.push_back({.step = step + 1, .rank = rank, .step_time_s = step_s, .compute_s = compute_s,
                             .tp_comm_s = r.tp_comm_s, .p2p_s = r.p2p_s, .bubble_s = r.bubble_s,
                             .dp_comm_s = comm_s, .optimizer_s = optimizer_s});
      if (exchange.in_flight_s > 0) overlap_fractions.push_back(exchange.hidden_s / exchange.in_flight_s);
      exchanged_bytes = exchange.bytes;
      if (exchange.bytes_sent >= 0) bytes_sent.push_back(static_cast<double>(exchange.bytes_sent));
      if (!trace.empty()) {
        timeline.add(fmt::format("step {}", step + 1), "step", r.start_s, step_s, step + 1);
        if (r.pipeline_ops.empty()) timeline.add("forward+backward", "compute", r.start_s, compute_s, step + 1);
        for (const PipelineOpRecord& op : r.pipeline_ops) {  // each micro-batch, and the wait for its message
          const char kind = op.op.kind == plan::PipelineOpKind::forward ? 'F' : 'B';
          if (op.start_s > op.wait_start_s)
            timeline.add(fmt::format("wait {}{}", kind, op.op.micro), "pipeline-wait", op.wait_start_s,
                         op.start_s - op.wait_start_s, step + 1);
          timeline.add(fmt::format("{}{}", kind, op.op.micro), "compute", op.start_s, op.end_s - op.start_s, step + 1);
        }
        for (std::size_t k = 0; k < communicators.size(); ++k) {
          const auto& records = communicators[k]->stats().records();
          for (std::size_t i = first_record[k]; i < records.size(); ++i)
            timeline.add(fmt::format("{} {} {:.3g} MiB", communicators[k]->name(),
                                     parallel::to_string(records[i].collective),
                                     static_cast<double>(records[i].bytes) / (1 << 20)),
                         "comm", records[i].start_s, records[i].seconds, step + 1);
        }
        timeline.add("optimizer", "optimizer", r.loss_end_s, optimizer_s, step + 1);
      }
      if (root)
        run->append_step({.step = step + 1, .loss = loss, .lr = r.lr, .grad_norm = r.grad_norm, .loss_scale = r.loss_scale,
                          .step_time_s = step_s, .compute_s = compute_s,
                          .comm_s = comm_s + r.tp_comm_s + r.p2p_s, .bubble_s = r.bubble_s,
                          .optimizer_s = optimizer_s, .samples = c.global_batch, .tokens = tokens_per_step,
                          .flops = flops_per_step});
      outcome.final_train_loss = loss;
      // SIGUSR1 (the scheduler's notice) stops every rank here, after a checkpoint
      const bool stop = checkpointer.stop_requested();
      if (stop || checkpointer.due(step + 1)) checkpointer.save(step + 1);
      if (stop)
        throw TrainingInterrupted(fmt::format("interrupted by signal {} after step {}; checkpoint {} holds it: "
                                              "rerun the same command to resume",
                                              parallel::termination_signal(), step + 1,
                                              checkpointer.path().string()));
      parallel::throw_if_job_failing();  // a termination signal, or (rank 0) another rank's failure
      const double rate = static_cast<double>(tokens_per_step > 0 ? tokens_per_step : c.global_batch) / step_s;
      progress.update(step, loss, rate, step_s);
      for (parallel::Communicator* comm : communicators)
        if (comm->stats().records().size() > 4096) comm->stats().clear();
      if ((step + 1) % eval_every == 0 || step + 1 == steps) record_eval(step + 1);
    }
    progress.finish();
    checkpointer.finish(steps);
    std::optional<compress::QuantizationReport> quantized;
    if (c.compress.quantize == "int8" && root) {  // the other ranks wait in the next collective
      quantized = task->quantize_int8(c.compress.calibration_batches);
      run->write_compression(compression_attributes(*quantized, c.compress.calibration_batches, tokens_per_step > 0));
      progress.message(fmt::format("int8: {} {:.4f} (fp32 {:.4f}), weights {} bytes (fp32 {}: {:.2f}× smaller), "
                                   "inference {:.0f} samples/s (fp32 {:.0f})",
                                   tokens_per_step > 0 ? "held-out loss" : "test accuracy", quantized->int8_metric,
                                   quantized->fp32_metric, quantized->weight_bytes_int8, quantized->weight_bytes_fp32,
                                   static_cast<double>(quantized->weight_bytes_fp32) /
                                       static_cast<double>(quantized->weight_bytes_int8),
                                   quantized->int8_samples_per_s, quantized->fp32_samples_per_s));
    }

    const std::vector<io::TimelineRow> timeline_rows = gather_timeline(*world, my_timeline);
    const std::vector<io::RankRow> ranks = rank_rows(timeline_rows, grid);
    const std::vector<io::MemoryRow> memory = memory_rows(*world, tracker);
    if (!trace.empty()) {
      const std::vector<std::string> events =
          parallel::gather_text(*world, timeline.chrome_trace_events(rank, host_name(), origin_s));
      if (root) metrics::write_chrome_trace(trace, events);
    }
    std::vector<double> steady;
    for (std::size_t s = my_timeline.size() > 1 ? 1 : 0; s < my_timeline.size(); ++s)
      steady.push_back(my_timeline[s].step_time_s);
    outcome.step_time_median_s = median(steady);
    outcome.tokens_per_s = static_cast<double>(tokens_per_step) / outcome.step_time_median_s;
    if (root) {
      const auto& usage = tracker.usage();
      run->write_memory(memory);
      run->write_ranks(ranks);
      run->append_timeline(timeline_rows);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      io::Attributes summary = {{"step_time_median_s", outcome.step_time_median_s},
                          {"samples_per_s", static_cast<double>(c.global_batch) / outcome.step_time_median_s},
                          {"tokens_per_s", outcome.tokens_per_s},
                          {"achieved_tflops", flops_per_step / outcome.step_time_median_s / 1e12},
                          {"mfu", prediction && prediction->peak_flops_per_rank > 0
                                      ? flops_per_step / outcome.step_time_median_s /
                                            (static_cast<double>(world->size()) * prediction->peak_flops_per_rank)
                                      : nan},
                          {"final_loss", outcome.final_train_loss},
                          {"final_eval_loss", outcome.final_heldout_loss},
                          {"final_accuracy", outcome.final_heldout_accuracy},
                          {"peak_bytes", std::max_element(memory.begin(), memory.end(),
                                                          [](const io::MemoryRow& a, const io::MemoryRow& b) {
                                                            return a.peak_tracked < b.peak_tracked;
                                                          })->peak_tracked},
                          {"weight_bytes", quantized ? quantized->weight_bytes_int8
                                                     : usage.peak_of(MemoryCategory::params)},
                          {"parameters", task->parameter_count()},
                          {"flops_per_step", flops_per_step},
                          {"steps", steps},
                          {"dp_exchange_bytes", exchanged_bytes},
                          {"dp_bytes_sent_per_step", bytes_sent.empty() ? nan : median(bytes_sent)},
                          {"overlap_fraction", overlap_fractions.empty() ? nan : median(overlap_fractions)},
                          {"skipped_steps", distributed.skipped_steps()}};
      if (constraints) {  // what fine-tuning kept fixed, and the sparsity the weights reached
        summary.emplace_back("sparsity", constraints->sparsity().fraction());
        summary.emplace_back("pruned_weights", constraints->pruned());
        summary.emplace_back("frozen_parameters", constraints->frozen());
      }
      run->write_summary(summary);
      if (prediction && prediction->feasible) run->write_prediction(prediction_errors(*prediction, outcome, memory));
      run->finish("ok", "");
    }
    return outcome;
  } catch (const std::exception& e) {
    // SIGUSR1 is the scheduler's notice before preemption (Slurm --signal): interrupted.
    // Anything else, SIGTERM included (mpirun's when another rank died), is a failure.
    const int signal = parallel::termination_signal();
    const bool checkpointed = dynamic_cast<const TrainingInterrupted*>(&e) != nullptr;
    if (root)
      run->finish(signal == SIGUSR1 || checkpointed ? "interrupted" : "failed",
                  signal == SIGTERM && world->size() > 1
                      ? fmt::format("{} (mpirun or the scheduler ended the job: another rank died, or it was cancelled)",
                                    e.what())
                      : std::string(e.what()));
    throw;
  }
}

}  // namespace sb::train
