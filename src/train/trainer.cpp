// The single-rank training loop: sample, forward, backward, clip, AdamW, evaluate, record.
#include "train/trainer.hpp"

#include <Kokkos_Core.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "data/text_corpus.hpp"
#include "io/results_file.hpp"
#include "kernels/kernels.hpp"
#include "metrics/run_context.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "optim/adamw.hpp"
#include "runtime/parallel_runtime.hpp"
#include "train/lr_schedule.hpp"
#include "train/progress.hpp"

namespace sb::train {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

gpt::GptConfig resolve_model(const TrainConfig& c) {
  if (c.model.layers == 0) return gpt::gpt_config_by_name(c.model.name);
  gpt::GptConfig g;
  g.name = c.model.name;
  g.layers = c.model.layers;
  g.channels = c.model.hidden;
  g.heads = c.model.heads;
  g.max_seq_len = c.model.seq_len;
  g.vocab = c.model.vocab;
  return g;
}

// Rejects what this trainer cannot run, before anything is allocated or written.
void check_supported(const TrainConfig& c, const gpt::GptConfig& model, std::int64_t seq_len,
                     std::int64_t micro) {
  SB_USER_CHECK(c.strategy.world_size() == 1,
                "{}: strategy dp={} tp={} pp={} needs {} ranks, but this trainer runs one rank "
                "(set dp, tp and pp to 1)",
                c.source, c.strategy.dp, c.strategy.tp, c.strategy.pp, c.strategy.world_size());
  SB_USER_CHECK(c.strategy.zero == 0, "{}: 'strategy.zero' {} needs data parallelism; use 0 on one rank",
                c.source, c.strategy.zero);
  SB_USER_CHECK(c.precision.dtype == "fp32",
                "{}: precision '{}' is not available in this build; use fp32", c.source,
                c.precision.dtype);
  SB_USER_CHECK(c.optimizer.type == "adamw", "{}: the GPT trains with optimizer.type adamw, not '{}'",
                c.source, c.optimizer.type);
  SB_USER_CHECK(model.vocab >= 256, "{}: byte-level text needs model.vocab >= 256, got {}", c.source,
                model.vocab);
  SB_USER_CHECK(seq_len <= model.max_seq_len,
                "{}: seq_len {} exceeds the model's maximum sequence length {}", c.source, seq_len,
                model.max_seq_len);
  SB_USER_CHECK(c.global_batch % micro == 0,
                "{}: batch.global ({}) must be a multiple of batch.micro ({})", c.source,
                c.global_batch, micro);
  SB_USER_CHECK(c.strategy.recompute == "none", "{}: strategy.recompute '{}' is not available on one rank yet",
                c.source, c.strategy.recompute);
}

struct EvalResult {
  double loss = 0, accuracy = 0;
};

// Mean next-byte loss and top-1 accuracy over n evenly spaced windows of `sampler`.
EvalResult evaluate(gpt::GptModel& model, const data::WindowSampler& sampler, std::int64_t batches,
                    std::int64_t B, std::int64_t T, std::vector<std::int32_t>& tokens,
                    std::vector<std::int32_t>& targets) {
  EvalResult r;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < batches; ++i) {
    sampler.evaluation_batch(i, batches, tokens.data(), targets.data());
    r.loss += model.forward(tokens.data(), targets.data(), B, T);
    const float* logits = model.logits();
    const std::int64_t V = model.config().vocab;
    for (std::int64_t bt = 0; bt < B * T; ++bt) {
      const float* row = logits + bt * V;
      const auto best = std::max_element(row, row + V) - row;
      correct += best == targets[static_cast<std::size_t>(bt)];
    }
  }
  r.loss /= static_cast<double>(batches);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(batches * B * T);
  return r;
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
  const gpt::GptConfig model_config = resolve_model(c);
  const std::int64_t T = c.seq_len > 0 ? c.seq_len : model_config.max_seq_len;
  const std::int64_t micro = c.micro_batch > 0 ? c.micro_batch : c.global_batch;
  const std::int64_t accumulation = c.global_batch / std::max<std::int64_t>(micro, 1);
  check_supported(c, model_config, T, micro);
  const auto backend = kernels::parse_backend(c.device == "cuda" ? "cuda" : "cpu");
  kernels::kernels_for(backend);  // "not compiled: cuda" before any work
  const data::TextCorpus corpus = data::load_sotu(c.data.path);
  const int threads = c.threads > 0 ? static_cast<int>(c.threads)
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  ParallelRuntime runtime(threads);
  MemoryTracker tracker;
  gpt::GptModel model(model_config, micro, T, backend, tracker);
  model.init_weights(c.seed);
  optim::AdamWConfig adamw_config;
  adamw_config.lr = c.optimizer.lr;
  adamw_config.beta1 = c.optimizer.beta1;
  adamw_config.beta2 = c.optimizer.beta2;
  adamw_config.eps = c.optimizer.eps;
  adamw_config.weight_decay = c.optimizer.weight_decay;
  adamw_config.grad_clip = c.optimizer.grad_clip;
  optim::AdamW optimizer(model.parameter_slices(), adamw_config, backend, tracker);
  const auto& k = kernels::kernels_for(backend);

  const data::WindowSampler train_windows(corpus.train(), c.global_batch, T, c.seed);
  const data::WindowSampler heldout_eval(corpus.heldout(), micro, T, 0);
  const data::WindowSampler train_eval(corpus.train(), micro, T, 0);
  std::vector<std::int32_t> batch_tokens(static_cast<std::size_t>(c.global_batch * T));
  std::vector<std::int32_t> batch_targets(batch_tokens.size());
  std::vector<std::int32_t> eval_tokens(static_cast<std::size_t>(micro * T)), eval_targets(eval_tokens.size());
  const double flops_per_step = gpt::gpt_training_flops(model_config, c.global_batch, T);
  const std::int64_t tokens_per_step = c.global_batch * T;

  // ---- the result file: status reads "interrupted" until finish() ----
  io::ResultsFile file = append ? io::ResultsFile::open_or_create(out) : io::ResultsFile::create(out);
  io::Attributes attrs = {
      {"config_yaml", c.yaml}, {"model", model_config.name}, {"dataset", corpus.name()},
      {"device", c.device}, {"precision", c.precision.dtype}, {"dp", c.strategy.dp},
      {"tp", c.strategy.tp}, {"pp", c.strategy.pp}, {"micro_batches", accumulation},
      {"schedule", c.strategy.schedule}, {"zero", c.strategy.zero},
      {"world_size", c.strategy.world_size()}, {"global_batch", c.global_batch}, {"seq_len", T},
      {"started_utc", metrics::utc_now_iso8601()}, {"git_sha", std::string(SB_GIT_SHA)}};
  io::RunWriter run = file.begin_run(run_id, attrs);
  try {
    run.write_context(metrics::collect_run_context(threads));
    ProgressLine progress(run_id, c.steps, c.log_every, true);
    const std::int64_t eval_every = c.eval_every > 0 ? c.eval_every : c.steps;
    std::vector<double> step_times;
    TrainOutcome outcome;
    auto record_eval = [&](std::int64_t step) {
      const EvalResult heldout = evaluate(model, heldout_eval, c.eval_batches, micro, T, eval_tokens, eval_targets);
      const EvalResult train = evaluate(model, train_eval, c.eval_batches, micro, T, eval_tokens, eval_targets);
      run.append_eval({step, "heldout", heldout.loss, heldout.accuracy});
      run.append_eval({step, "train", train.loss, train.accuracy});
      progress.message(fmt::format("eval at step {}: held-out loss {:.4f} nats/char, next-byte accuracy {:.1f}%, "
                                   "train-split loss {:.4f}",
                                   step, heldout.loss, 100 * heldout.accuracy, train.loss));
      outcome.final_heldout_loss = heldout.loss;
      outcome.final_heldout_accuracy = heldout.accuracy;
    };

    for (std::int64_t step = 0; step < c.steps; ++step) {
      const auto t_step = Clock::now();
      train_windows.training_batch(step, batch_tokens.data(), batch_targets.data());
      const auto t_compute = Clock::now();
      model.zero_grad();
      double loss = 0;
      for (std::int64_t m = 0; m < accumulation; ++m) {
        const auto offset = static_cast<std::size_t>(m * micro * T);
        loss += model.forward(batch_tokens.data() + offset, batch_targets.data() + offset, micro, T);
        model.backward();
      }
      loss /= static_cast<double>(accumulation);
      if (accumulation > 1) {
        const auto grads = model.gradients_flat();
        k.scale_inplace(grads.data(), static_cast<std::int64_t>(grads.size()), 1.0 / static_cast<double>(accumulation));
      }
      Kokkos::fence();
      const double compute_s = seconds_since(t_compute);
      const auto t_optimizer = Clock::now();
      const double lr = learning_rate_at(c.optimizer, step, c.warmup_steps, c.steps);
      const double grad_norm = optimizer.clip_and_step(lr);
      Kokkos::fence();
      const double optimizer_s = seconds_since(t_optimizer);
      const double step_s = seconds_since(t_step);
      SB_USER_CHECK(std::isfinite(loss), "{}: training diverged: loss is {} at step {} (lower optimizer.lr?)",
                    c.source, loss, step);
      step_times.push_back(step_s);
      run.append_step({.step = step + 1, .loss = loss, .lr = lr, .grad_norm = grad_norm, .loss_scale = 1.0,
                       .step_time_s = step_s, .compute_s = compute_s, .comm_s = 0.0, .bubble_s = 0.0,
                       .optimizer_s = optimizer_s, .samples = c.global_batch, .tokens = tokens_per_step,
                       .flops = flops_per_step});
      outcome.final_train_loss = loss;
      progress.update(step, loss, static_cast<double>(tokens_per_step) / step_s, step_s);
      if ((step + 1) % eval_every == 0 || step + 1 == c.steps) record_eval(step + 1);
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
                       {"parameters", gpt::gpt_parameter_count(model_config)},
                       {"flops_per_step", flops_per_step}});
    run.finish("ok", "");
    return outcome;
  } catch (const std::exception& e) {
    run.finish("failed", e.what());
    throw;
  }
}

}  // namespace sb::train
