// The single-rank training loop: sample, forward, backward, clip, AdamW, evaluate, record.
#include "train/trainer.hpp"

#include <Kokkos_Core.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "io/results_file.hpp"
#include "kernels/kernels.hpp"
#include "metrics/run_context.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/lr_schedule.hpp"
#include "train/progress.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Rejects what this trainer cannot run, before anything is allocated or written.
void check_supported(const TrainConfig& c) {
  SB_USER_CHECK(c.strategy.world_size() == 1,
                "{}: strategy dp={} tp={} pp={} needs {} ranks, but this trainer runs one rank "
                "(set dp, tp and pp to 1)",
                c.source, c.strategy.dp, c.strategy.tp, c.strategy.pp, c.strategy.world_size());
  SB_USER_CHECK(c.strategy.zero == 0, "{}: 'strategy.zero' {} needs data parallelism; use 0 on one rank",
                c.source, c.strategy.zero);
  SB_USER_CHECK(c.precision.dtype == "fp32", "{}: precision '{}' is not available in this build; use fp32",
                c.source, c.precision.dtype);
  SB_USER_CHECK(c.strategy.recompute == "none", "{}: strategy.recompute '{}' is not available on one rank yet",
                c.source, c.strategy.recompute);
}

// AdamW or SGD behind one call: clip the gradients, step with this learning rate, return
// the gradient norm before clipping.
std::function<double(double)> make_optimizer_step(const TrainConfig& c, TrainingTask& task,
                                                  kernels::Backend backend, MemoryTracker& tracker) {
  const auto& o = c.optimizer;
  if (o.type == "sgd") {
    optim::SgdConfig config;
    config.lr = o.lr;
    config.momentum = o.momentum;
    config.weight_decay = o.weight_decay;
    config.grad_clip = o.grad_clip;
    auto sgd = std::make_shared<optim::Sgd>(task.parameter_slices(), config, backend, tracker);
    return [sgd](double lr) { return sgd->clip_and_step(lr); };
  }
  optim::AdamWConfig config;
  config.lr = o.lr;
  config.beta1 = o.beta1;
  config.beta2 = o.beta2;
  config.eps = o.eps;
  config.weight_decay = o.weight_decay;
  config.grad_clip = o.grad_clip;
  auto adamw = std::make_shared<optim::AdamW>(task.parameter_slices(), config, backend, tracker);
  return [adamw](double lr) { return adamw->clip_and_step(lr); };
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

TrainOutcome run_training(const TrainConfig& c, const std::filesystem::path& out,
                          const std::string& run_id, bool append) {
  // ---- everything that can fail on user input, before any file is written ----
  check_supported(c);
  const auto backend = kernels::parse_backend(c.device == "cuda" ? "cuda" : "cpu");
  kernels::kernels_for(backend);  // "not compiled: cuda" before any work
  // The CUDA kernels take device pointers, and every tensor of this trainer lives in host
  // memory: refuse here rather than hand host pointers to the GPU (device-resident training
  // is the next slice of the GPU issue).
  SB_USER_CHECK(backend != kernels::Backend::cuda,
                "{}: device 'cuda' cannot train yet: this build has the CUDA kernels but the "
                "trainer keeps its tensors in host memory; use device: cpu", c.source);
  const int threads = c.threads > 0 ? static_cast<int>(c.threads)
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ParallelRuntime runtime(threads);
  MemoryTracker tracker;
  const std::unique_ptr<TrainingTask> task = make_training_task(c, backend, tracker);
  const auto optimizer_step = make_optimizer_step(c, *task, backend, tracker);
  const std::int64_t steps = c.epochs > 0 ? c.epochs * task->steps_per_epoch() : c.steps;
  const std::int64_t eval_every =
      c.eval_every > 0 ? c.eval_every : (c.epochs > 0 ? task->steps_per_epoch() : steps);
  const std::int64_t micro = micro_batch_of(c);
  const double flops_per_step = task->flops_per_step();
  const std::int64_t tokens_per_step = task->tokens_per_step();

  // ---- the result file: status reads "interrupted" until finish() ----
  io::ResultsFile file = append ? io::ResultsFile::open_or_create(out) : io::ResultsFile::create(out);
  io::Attributes attrs = {
      {"config_yaml", c.yaml}, {"model", task->model_name()}, {"dataset", task->dataset_name()},
      {"device", c.device}, {"precision", c.precision.dtype}, {"dp", c.strategy.dp},
      {"tp", c.strategy.tp}, {"pp", c.strategy.pp}, {"micro_batches", c.global_batch / micro},
      {"schedule", c.strategy.schedule}, {"zero", c.strategy.zero},
      {"world_size", c.strategy.world_size()}, {"global_batch", c.global_batch}, {"seq_len", task->seq_len()},
      {"started_utc", metrics::utc_now_iso8601()}, {"git_sha", std::string(SB_GIT_SHA)}};
  io::RunWriter run = file.begin_run(run_id, attrs);
  try {
    run.write_context(metrics::collect_run_context(threads));
    ProgressLine progress(run_id, steps, c.log_every, true, tokens_per_step > 0 ? "tok/s" : "samples/s");
    std::vector<double> step_times;
    TrainOutcome outcome;
    auto record_eval = [&](std::int64_t step) {
      std::string line = fmt::format("eval at step {}:", step);
      for (const EvalResult& e : task->evaluate()) {
        run.append_eval({step, e.split, e.loss, e.accuracy});
        line += fmt::format(" {} loss {:.4f}, accuracy {:.2f}%;", e.split, e.loss, 100 * e.accuracy);
        if (e.split != "train") {  // the held-out (text) or test (images) figure is the headline
          outcome.final_heldout_loss = e.loss;
          outcome.final_heldout_accuracy = e.accuracy;
        }
      }
      line.pop_back();
      progress.message(line);
    };

    for (std::int64_t step = 0; step < steps; ++step) {
      const auto t_step = Clock::now();
      const double loss = task->forward_backward(step);
      Kokkos::fence();
      const double compute_s = seconds_since(t_step);
      const auto t_optimizer = Clock::now();
      const double lr = learning_rate_at(c.optimizer, step, c.warmup_steps, steps);
      const double grad_norm = optimizer_step(lr);
      Kokkos::fence();
      const double optimizer_s = seconds_since(t_optimizer);
      const double step_s = seconds_since(t_step);
      SB_USER_CHECK(std::isfinite(loss), "{}: training diverged: loss is {} at step {} (lower optimizer.lr?)",
                    c.source, loss, step + 1);
      step_times.push_back(step_s);
      run.append_step({.step = step + 1, .loss = loss, .lr = lr, .grad_norm = grad_norm, .loss_scale = 1.0,
                       .step_time_s = step_s, .compute_s = compute_s, .comm_s = 0.0, .bubble_s = 0.0,
                       .optimizer_s = optimizer_s, .samples = c.global_batch, .tokens = tokens_per_step,
                       .flops = flops_per_step});
      outcome.final_train_loss = loss;
      const double rate = static_cast<double>(tokens_per_step > 0 ? tokens_per_step : c.global_batch) / step_s;
      progress.update(step, loss, rate, step_s);
      if ((step + 1) % eval_every == 0 || step + 1 == steps) record_eval(step + 1);
    }
    progress.finish();

    // The first step pays for page faults and thread start-up: leave it out of the median.
    const std::vector<double> steady(step_times.begin() + (step_times.size() > 1 ? 1 : 0), step_times.end());
    outcome.step_time_median_s = median(steady);
    outcome.tokens_per_s = static_cast<double>(tokens_per_step) / outcome.step_time_median_s;
    const auto& usage = tracker.usage();
    const io::MemoryRow memory{.rank = 0,
                               .params = usage.peak_of(MemoryCategory::params),
                               .grads = usage.peak_of(MemoryCategory::grads),
                               .optimizer = usage.peak_of(MemoryCategory::optimizer),
                               .activations = usage.peak_of(MemoryCategory::activations),
                               .workspace = usage.peak_of(MemoryCategory::workspace),
                               .comm = usage.peak_of(MemoryCategory::comm),
                               .peak_tracked = usage.total_peak,
                               .peak_rss = peak_rss_bytes()};
    run.write_memory({&memory, 1});
    const io::RankRow rank{.rank = 0, .dp_rank = 0, .tp_rank = 0, .pp_rank = 0,
                           .step_time_s = outcome.step_time_median_s,
                           .compute_s = outcome.step_time_median_s, .comm_s = 0, .bubble_s = 0, .idle_s = 0};
    run.write_ranks({&rank, 1});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    run.write_summary({{"step_time_median_s", outcome.step_time_median_s},
                       {"samples_per_s", static_cast<double>(c.global_batch) / outcome.step_time_median_s},
                       {"tokens_per_s", outcome.tokens_per_s},
                       {"achieved_tflops", flops_per_step / outcome.step_time_median_s / 1e12},
                       {"mfu", nan},  // needs the site's peak: the cost model's site profiles
                       {"final_loss", outcome.final_train_loss},
                       {"final_eval_loss", outcome.final_heldout_loss},
                       {"final_accuracy", outcome.final_heldout_accuracy},
                       {"peak_bytes", usage.total_peak},
                       {"weight_bytes", usage.peak_of(MemoryCategory::params)},
                       {"parameters", task->parameter_count()},
                       {"flops_per_step", flops_per_step},
                       {"steps", steps}});
    run.finish("ok", "");
    return outcome;
  } catch (const std::exception& e) {
    run.finish("failed", e.what());
    throw;
  }
}

}  // namespace sb::train
