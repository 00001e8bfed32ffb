// SPDX-License-Identifier: Apache-2.0
// The training loop on every rank, read top to bottom: set up this rank's part of the run, open
// the run's record, then per step: the distributed step, the finiteness check, its record, a
// checkpoint or stop, progress and evaluation; then quantisation, the per-rank tables, the
// summary and the prediction's errors. Leaves out each of those (their own files beside this one).
#include "train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "io/results_file.hpp"
#include "kernels/kernels.hpp"
#include "metrics/collective_log.hpp"
#include "metrics/run_context.hpp"
#include "metrics/step_comm_window.hpp"
#include "metrics/step_trace.hpp"
#include "metrics/timeline.hpp"
#include "parallel/communicator.hpp"
#include "parallel/fault.hpp"
#include "parallel/gather_text.hpp"
#include "parallel/process_grid.hpp"
#include "plan/run_plan.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/checkpoint.hpp"
#include "train/distributed_step.hpp"
#include "train/failure_injection.hpp"
#include "train/int8_after_training.hpp"
#include "train/sparse_after_training.hpp"
#include "train/memory_fit.hpp"
#include "train/non_finite_check.hpp"
#include "train/parameter_constraints.hpp"
#include "train/progress.hpp"
#include "train/rank_tables.hpp"
#include "train/run_record.hpp"
#include "train/run_summary.hpp"
#include "train/thread_allocation.hpp"
#include "train/training_task.hpp"
#include "train/world_communicator.hpp"

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
// precision.main_grads storage with a 16-bit dtype: the main gradients are accumulated and
// all-reduced in 16 bits by the bucketed data-parallel exchange (under ZeRO-1 reduce-scattered;
// under ZeRO-2 and 3 reduced into 16-bit gradient shards), in host memory.
void check_sixteen_bit_main_gradients(const plan::TrainConfig& c) {
  const std::string& d = c.precision.dtype;
  SB_USER_CHECK(c.device == "cpu",
                "{}: precision.main_grads storage keeps the {} main gradients in host memory; on device cuda the "
                "trainer keeps fp32 main gradients (precision.main_grads: fp32)", c.source, d);
  SB_USER_CHECK(plan::trains_resnet(c) || c.data.dataset == "sotu",
                "{}: precision.main_grads storage trains the GPT language model (data.dataset sotu) and the ResNets; "
                "sequence classification on {} keeps fp32 main gradients", c.source, c.data.dataset);
  SB_USER_CHECK(c.finetune.from.empty() && c.prune.pattern.empty(),
                "{}: finetune's frozen layers and prune's masks act on fp32 gradients; precision.main_grads storage "
                "keeps {} ones (use main_grads fp32 with finetune and prune)", c.source, d);
}

void check_supported(const plan::TrainConfig& c) {
  SB_USER_CHECK(c.precision.dtype != "fp8",
                "{}: precision fp8 (the blocks' linear layers in fp8, the rest in bf16, as Transformer Engine runs "
                "them) is modelled by `scalebench predict` and `plan` only; the trainer runs fp32, bf16 and fp16",
                c.source);
  SB_USER_CHECK(!c.strategy.tp_overlap,
                "{}: strategy.tp_overlap (the sequence-parallel collectives under the linear layers' GEMMs, as "
                "Transformer Engine's userbuffers run them) is modelled by `scalebench predict` and `plan` only; the "
                "trainer runs each collective after its GEMM (leave strategy.tp_overlap out)", c.source);
  SB_USER_CHECK(!c.strategy.p2p_overlap,
                "{}: strategy.p2p_overlap (the pipeline's sends and receives beside the compute, as Megatron-LM's "
                "overlap_p2p_comm runs them) is modelled by `scalebench predict` and `plan` only; the trainer waits "
                "for each message (leave strategy.p2p_overlap out)", c.source);
  SB_USER_CHECK(!c.strategy.grad_accumulation_fusion,
                "{}: strategy.grad_accumulation_fusion (the weight-gradient GEMMs accumulating into the main "
                "gradients, as Megatron-LM's gradient_accumulation_fusion runs them) is modelled by `scalebench "
                "predict` and `plan` only; the trainer adds each micro-batch's gradients in a pass of their own "
                "(leave strategy.grad_accumulation_fusion out)", c.source);
  SB_USER_CHECK(!c.strategy.recompute_early_stop,
                "{}: strategy.recompute_early_stop (a block's recomputed forward stopping once the backward's tensors "
                "are rebuilt, as PyTorch's non-reentrant checkpoint runs it) is modelled by `scalebench predict` and "
                "`plan` only; the trainer reruns each block's whole forward (leave strategy.recompute_early_stop out)",
                c.source);
  SB_USER_CHECK(c.model.attention == "unfused",
                "{}: model.attention {} is modelled by `scalebench predict` and `plan` only; the trainer runs unfused "
                "attention (set model.attention: unfused or leave it out)", c.source, c.model.attention);
  SB_USER_CHECK(c.model.kernels == "native",
                "{}: model.kernels {} (kernels of an older GPU's instructions on a newer one) is modelled by "
                "`scalebench predict` and `plan` only; the trainer runs its own kernels (leave model.kernels out)",
                c.source, c.model.kernels);
  SB_USER_CHECK(c.model.cross_entropy == "fused",
                "{}: model.cross_entropy {} is modelled by `scalebench predict` and `plan` only; the trainer takes the "
                "loss with its own softmax and cross-entropy kernels (set model.cross_entropy: fused or leave it out)",
                c.source, c.model.cross_entropy);
  SB_USER_CHECK(plan::trains_resnet(c) || plan::gpt_config_of(c).block == gpt::GptBlock::gpt2,
                "{}: model {} has Llama-style blocks (grouped-query attention, rotary positions, untied head), "
                "which the trainer does not build; `scalebench predict` and `plan` model it",
                c.source, c.model.name);
  SB_USER_CHECK(!c.strategy.sequence_parallel || c.data.dataset == "sotu",
                "{}: strategy.sequence_parallel trains the GPT language model (data.dataset sotu), not {}", c.source,
                c.data.dataset);
  SB_USER_CHECK(c.strategy.zero <= 1 || c.strategy.pp == 1,
                "{}: strategy.zero {} with pp {}: ZeRO-2 and 3 reduce (and gather) every micro-batch's gradients "
                "(and parameters) as its backward ends, which pipeline stages interleave; as DeepSpeed's pipeline "
                "engine, the trainer shards only the optimizer state across pipeline stages: use zero 0 or 1",
                c.source, c.strategy.zero, c.strategy.pp);
  SB_USER_CHECK(c.strategy.zero < 3 || plan::trains_resnet(c) || c.data.dataset == "sotu",
                "{}: strategy.zero 3 shards the parameters of the GPT language model (data.dataset sotu) and the "
                "ResNets, gathered block by block; model {} on {} trains with zero 0, 1 or 2", c.source, c.model.name,
                c.data.dataset);
  SB_USER_CHECK(c.strategy.zero < 3 || c.compress.quantize == "none",
                "{}: compress.quantize {} reads every weight after training, which strategy.zero 3 keeps sharded over "
                "the data-parallel ranks; use zero 0, 1 or 2", c.source, c.compress.quantize);
  SB_USER_CHECK(c.strategy.zero < 2 || plan::trains_resnet(c) || c.data.dataset == "sotu",
                "{}: strategy.zero 2 trains the GPT language model (data.dataset sotu) and the ResNets; sequence "
                "classification on {} trains with zero 0 or 1", c.source, c.data.dataset);
  SB_USER_CHECK(c.strategy.zero < 2 || (c.finetune.from.empty() && c.prune.pattern.empty()),
                "{}: strategy.zero 2 keeps no full gradient for finetune's frozen layers or prune's masks to "
                "act on; use zero 0 or 1 with finetune and prune", c.source);
  if (c.precision.sixteen_bit_main_gradients()) check_sixteen_bit_main_gradients(c);
  if (c.device == "cuda") check_supported_on_cuda(c);
}

}  // namespace

std::optional<std::string> trainer_refusal(const plan::TrainConfig& config) {
  try {
    plan::runnable_plan(config);
    check_supported(config);
  } catch (const UserError& refusal) {
    return std::string(refusal.what());
  }
  return std::nullopt;
}

namespace {

// Other runs' checkpoints this one starts from or learns from, as files (run:<id> resolved).
plan::TrainConfig with_checkpoint_sources(plan::TrainConfig c, const std::filesystem::path& out) {
  if (!c.finetune.from.empty()) c.finetune.from = checkpoint_source(c.finetune.from, out).string();
  if (!c.distill.teacher.empty()) c.distill.teacher = checkpoint_source(c.distill.teacher, out).string();
  return c;
}

// The back-end of config.device, once the config passed every check: "not compiled: cuda"
// before any work.
kernels::Backend supported_backend(const plan::TrainConfig& c) {
  check_supported(c);
  const auto backend = kernels::parse_backend(c.device == "cuda" ? "cuda" : "cpu");
  kernels::kernels_for(backend);
  return backend;
}

// On cuda: this rank's GPU chosen, then NCCL around MPI; every tensor after it lives on it.
std::unique_ptr<parallel::Communicator> world_for(const plan::TrainConfig& c, kernels::Backend backend) {
  std::unique_ptr<parallel::Communicator> world = make_world_communicator(kernels::memory_device(backend), c.source);
  SB_USER_CHECK(world->size() == c.strategy.world_size(),
                "{}: the strategy needs {} ranks (dp×tp×pp) but the MPI world has {}; launch with mpirun -np {}",
                c.source, c.strategy.world_size(), world->size(), c.strategy.world_size());
  return world;
}

// This rank's threads, once its share of the predicted memory fits where it runs (its GPU is
// chosen with the world): an impossible batch is refused with the figures before anything
// allocates.
ThreadAllocation allocation_with_room(const plan::TrainConfig& c, kernels::Backend backend,
                                      const plan::RunPrediction* prediction) {
  ThreadAllocation allocation = allocate_threads(c.threads, c.source, MPI_COMM_WORLD);
  refuse_if_memory_does_not_fit(c, prediction, kernels::memory_device(backend), allocation.node_ranks);
  return allocation;
}

// One rank's part of a run, built in the order each piece needs the ones before it; what can
// fail on user input comes first, so a config that cannot run writes nothing.
struct RankSetup {
  RankSetup(const plan::TrainConfig& config, const std::filesystem::path& out, const std::string& run_id,
            const plan::RunPrediction* prediction)
      : c(with_checkpoint_sources(config, out)),
        run_plan(plan::runnable_plan(c)),
        backend(supported_backend(c)),
        world(world_for(c, backend)),
        allocation(allocation_with_room(c, backend, prediction)),
        threads(allocation.threads),
        runtime(threads),
        grid(*world, static_cast<int>(c.strategy.dp), static_cast<int>(c.strategy.tp),
             static_cast<int>(c.strategy.pp)),
        task(make_training_task(c, run_plan, backend, tracker, grid)),
        distributed(c, *task, grid, backend, tracker),
        steps(c.epochs > 0 ? c.epochs * task->steps_per_epoch() : c.steps),
        eval_every(c.eval_every > 0 ? c.eval_every : (c.epochs > 0 ? task->steps_per_epoch() : steps)),
        checkpointer(c, checkpoint_path_of(c, out, run_id), *world, grid, *task, distributed),
        first_step(checkpointer.resume(steps)) {
    if (ParameterConstraints::wanted(c)) {
      constraints.emplace(c, *task, first_step == 0);
      distributed.set_parameter_constraints(&*constraints);
      if (first_step == 0) distributed.parameters_loaded();  // finetune.from's weights into a ZeRO shard
    }
  }
  bool root() const { return world->rank() == 0; }
  Device device() const { return kernels::memory_device(backend); }

  const plan::TrainConfig c;
  const plan::RunPlan run_plan;  // what predict predicts for this case
  const kernels::Backend backend;
  const std::unique_ptr<parallel::Communicator> world;
  const ThreadAllocation allocation;  // threads per rank and where they came from
  const int threads;
  ParallelRuntime runtime;
  MemoryTracker tracker;
  parallel::ProcessGrid grid;
  const std::unique_ptr<TrainingTask> task;
  DistributedStep distributed;  // broadcasts dp rank 0's weights
  const std::int64_t steps, eval_every;
  Checkpointer checkpointer;
  const std::int64_t first_step;  // 0, or the steps a checkpoint holds
  // finetune.from's weights (unless resuming), the frozen backbone and the pruning mask
  std::optional<ParameterConstraints> constraints;
};

// The communicators whose calls the trace and the collective log show: the grid's, then the world.
std::vector<parallel::CommGroup> comm_groups(RankSetup& s) {
  std::vector<parallel::CommGroup> groups = s.grid.groups();
  groups.push_back({s.world.get(), 0});
  return groups;
}

metrics::StepSpans step_spans(std::int64_t step, const StepResult& r) {
  metrics::StepSpans spans{.step = step, .start_s = r.start_s, .seconds = r.step_s(), .compute_s = r.compute_s(),
                           .optimizer_start_s = r.loss_end_s, .optimizer_s = r.optimizer_s(), .pipeline_ops = {}};
  for (const PipelineOpRecord& op : r.pipeline_ops)
    spans.pipeline_ops.push_back({.kind = op.op.kind == plan::PipelineOpKind::forward ? 'F' : 'B', .micro = op.op.micro,
                                  .chunk = op.op.chunk, .wait_start_s = op.wait_start_s, .start_s = op.start_s, .end_s = op.end_s});
  return spans;
}

// The steps of a run and what follows them, on every rank; rank 0 records.
class TrainingLoop {
 public:
  TrainingLoop(RankSetup& s, RunRecord& record, const std::string& run_id, const std::filesystem::path& trace,
               const plan::RunPrediction* prediction)
      : s_(s), record_(record), trace_path_(trace), prediction_(prediction),
        progress_(run_id, s.steps, s.c.log_every, s.root(), s.task->tokens_per_step() > 0 ? "tok/s" : "samples/s"),
        window_(comm_groups(s)), trace_(!trace.empty()), collectives_(s.steps) {}

  TrainOutcome run() {
    if (s_.constraints && s_.first_step == 0) evaluate(0);  // a fine-tuning run's starting point
    s_.world->barrier();
    origin_s_ = comm_clock_seconds();
    for (std::int64_t step = s_.first_step; step < s_.steps; ++step) {
      window_.begin_step();
      inject_failure_if_asked(s_.world->rank(), step + 1);
      const StepResult r = s_.distributed.run(step, s_.steps);
      stop_if_non_finite(s_.c, step + 1, r.loss, r.grad_norm, s_.distributed.scales_loss(), *s_.task, *s_.world,
                         s_.grid.pp_rank());
      tally_.add(step + 1, s_.world->rank(), r);
      record_calls(step + 1, r);
      record_.append_step(step_row(step + 1, r, s_.c.global_batch, tokens_per_step(), s_.task->flops_per_step()));
      checkpoint_or_stop(step + 1);
      parallel::throw_if_job_failing();  // a termination signal, or (rank 0) another rank's failure
      progress_.update(step, r.loss, static_cast<double>(samples_or_tokens_per_step()) / r.step_s(), r.step_s());
      if ((step + 1) % s_.eval_every == 0 || step + 1 == s_.steps) evaluate(step + 1);
    }
    progress_.finish();
    s_.checkpointer.finish(s_.steps);
    return finish();
  }

 private:
  std::int64_t tokens_per_step() const { return s_.task->tokens_per_step(); }
  std::int64_t samples_or_tokens_per_step() const {
    return tokens_per_step() > 0 ? tokens_per_step() : s_.c.global_batch;
  }

  // The step's communication calls into the trace and the collective log.
  void record_calls(std::int64_t step, const StepResult& r) {
    if (!trace_.enabled() && !collectives_.logs(step)) return;
    const std::vector<metrics::StepCall> calls = window_.calls();
    collectives_.add_step(step, s_.world->rank(), r.start_s, calls);
    if (trace_.enabled()) trace_.end_step(step_spans(step, r), calls);
  }

  // Every replica holds the same weights: replica 0's ranks evaluate, rank 0 records and says it.
  // Under ZeRO-3 every replica's ranks run it: each forward gathers its blocks from them all.
  void evaluate(std::int64_t step) {
    const double t0 = comm_clock_seconds();
    std::vector<EvalResult> results;
    if (s_.grid.dp_rank() == 0 || s_.c.strategy.zero == 3) results = s_.task->evaluate();
    if (s_.root()) {
      std::string line = fmt::format("eval at step {}:", step);
      for (const EvalResult& e : results) {
        record_.append_eval({step, e.split, e.loss, e.accuracy});
        line += fmt::format(" {} loss {:.4f}, accuracy {:.2f}%;", e.split, e.loss, 100 * e.accuracy);
        if (e.split != "train") {  // the held-out (text) or test (images) figure is the headline
          outcome_.final_heldout_loss = e.loss;
          outcome_.final_heldout_accuracy = e.accuracy;
        }
      }
      line.pop_back();
      progress_.message(line);
    }
    s_.world->barrier();  // the other ranks wait here, not inside the next step's collectives
    trace_.add_evaluation(t0, comm_clock_seconds() - t0, step);
  }

  // SIGUSR1 (the scheduler's notice) stops every rank here, after a checkpoint.
  void checkpoint_or_stop(std::int64_t steps_done) {
    Checkpointer& checkpointer = s_.checkpointer;
    const bool stop = checkpointer.stop_requested();
    if (stop || checkpointer.due(steps_done)) checkpointer.save(steps_done);
    if (stop)
      throw TrainingInterrupted(fmt::format("interrupted by signal {} after step {}; checkpoint {} holds it: "
                                            "rerun the same command to resume",
                                            parallel::termination_signal(), steps_done,
                                            checkpointer.path().string()));
  }

  // Collective: every rank's events in one Chrome trace, written by rank 0.
  void write_trace() {
    const std::vector<std::string> events = parallel::gather_text(
        *s_.world, trace_.timeline().chrome_trace_events(s_.world->rank(), host_name(), origin_s_));
    if (s_.root()) metrics::write_chrome_trace(trace_path_, events);
  }

  TrainOutcome finish() {
    // the training's memory, before what runs after it (post-training quantisation tracks its
    // own) and before ZeRO's sharded fp32 master weights are gathered whole, once, for what reads
    // every weight: the sparsity reached and the sparse copy of a fine-tuned or pruned run
    const std::vector<io::MemoryRow> memory = memory_rows(*s_.world, s_.tracker);
    if (s_.constraints) s_.distributed.gather_all_parameters();
    const std::optional<compress::QuantizationReport> quantized =
        quantize_int8_if_asked(s_.c, *s_.task, record_, progress_);
    const std::optional<std::int64_t> sparse_bytes = store_pruned_if_asked(s_.c, *s_.task, record_, progress_);
    const std::vector<io::TimelineRow> timeline = gather_timeline(*s_.world, tally_.timeline());
    const std::vector<io::RankRow> ranks = rank_rows(timeline, s_.grid);
    const std::vector<io::CollectiveRow> collectives = gather_collectives(*s_.world, collectives_.rows());
    if (trace_.enabled()) write_trace();
    outcome_.final_train_loss = tally_.final_loss();
    outcome_.step_time_median_s = tally_.step_time_median_s();
    outcome_.tokens_per_s = static_cast<double>(tokens_per_step()) / outcome_.step_time_median_s;
    if (record_.root()) {
      io::RunWriter& run = record_.writer();
      run.write_memory(memory);
      run.write_ranks(ranks);
      run.append_timeline(timeline);
      run.write_collectives(collectives);
      run.write_summary(summary_attributes(totals(quantized, sparse_bytes), tally_, outcome_, memory,
                                           s_.constraints ? &*s_.constraints : nullptr, prediction_));
      if (prediction_ && prediction_->feasible) run.write_prediction(prediction_errors(*prediction_, outcome_, memory));
      record_.finish_ok();
    }
    return outcome_;
  }

  RunTotals totals(const std::optional<compress::QuantizationReport>& quantized,
                   const std::optional<std::int64_t>& sparse_bytes) const {
    return {.global_batch = s_.c.global_batch, .tokens_per_step = tokens_per_step(),
            .parameters = s_.task->parameter_count(), .steps = s_.steps,
            .skipped_steps = s_.distributed.skipped_steps(),
            .weight_bytes = stored_weight_bytes(quantized, sparse_bytes),
            .flops_per_step = s_.task->flops_per_step(), .world_size = s_.world->size()};
  }

  // The weights this run produces, as stored: the int8 model's after quantisation, else the
  // sparse layouts' after pruning, else the tracked parameter bytes less a distillation
  // teacher's (read, not produced).
  std::int64_t stored_weight_bytes(const std::optional<compress::QuantizationReport>& quantized,
                                   const std::optional<std::int64_t>& sparse_bytes) const {
    if (quantized) return quantized->weight_bytes_int8;
    if (sparse_bytes) return *sparse_bytes;
    return s_.tracker.usage().peak_of(MemoryCategory::params) - s_.task->auxiliary_parameter_bytes();
  }

  RankSetup& s_;
  RunRecord& record_;
  const std::filesystem::path& trace_path_;
  const plan::RunPrediction* prediction_;
  ProgressLine progress_;
  metrics::StepCommWindow window_;
  metrics::StepTrace trace_;
  metrics::CollectiveLog collectives_;
  StepTally tally_;
  TrainOutcome outcome_;
  double origin_s_ = 0;  // the trace's zero: every rank leaves the barrier before the first step
};

}  // namespace

TrainOutcome run_training(const plan::TrainConfig& config, const std::filesystem::path& out, const std::string& run_id,
                          bool append, const std::filesystem::path& trace, const plan::RunPrediction* prediction,
                          bool run_id_chosen) {
  RankSetup rank(config, out, run_id, prediction);
  io::Attributes context = run_context_on(rank.device(), metrics::collect_run_context(rank.threads, MPI_COMM_WORLD));
  for (auto& attribute : thread_allocation_context(rank.allocation)) context.push_back(std::move(attribute));
  // A name the caller chose stays as given (run, submit and collect find the run by it).
  const std::string recorded_id = run_id_chosen ? run_id : name_saying_oversubscription(run_id, rank.allocation);
  if (rank.root() && rank.allocation.oversubscribed)
    std::fprintf(stderr, "scalebench: run '%s' oversubscribes: %d rank(s) of %d thread(s) on a node whose ranks may "
                 "use %d CPU(s); its timings are not one thread per core\n", recorded_id.c_str(),
                 rank.allocation.node_ranks, rank.threads, rank.allocation.node_cpus);
  // the result file, on rank 0: status reads "interrupted" until the loop finishes
  RunRecord record(rank.root(), out, append, recorded_id,
                   run_attributes(rank.c, rank.run_plan, *rank.task, rank.first_step), prediction);
  try {
    record.write_context(context);
    return TrainingLoop(rank, record, recorded_id, trace, prediction).run();
  } catch (const std::exception& e) {
    record.finish_failed(e, rank.world->size());
    throw;
  }
}

}  // namespace sb::train
