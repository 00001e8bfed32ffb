// SPDX-License-Identifier: Apache-2.0
// The GPT reference on a byte-level corpus: seeded training windows, gradient accumulation
// over micro-batches, held-out and training-split evaluation in nats per byte; under tensor
// parallelism a shard of every layer, under pipeline parallelism one stage driven by the
// pipeline executor (under interleaving, v model chunks whose parameters share one allocation).
#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "core/check.hpp"
#include "data/text_corpus.hpp"
#include "kernels/storage_kernels.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "train/device_staging.hpp"
#include "train/gpt_pipeline_stage.hpp"
#include "train/model_parallel_plumbing.hpp"
#include "train/pipeline_executor.hpp"
#include "train/sequence_parallel_gradient_sum.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

// This rank's part of the GPT in its local chunk k: the chunk's blocks (the plan's), its
// tensor-parallel shard and what it recomputes (strategy.recompute); the embedding on the
// model's first chunk, the head on its last.
gpt::GptPartition partition_of(const plan::TrainConfig& c, const plan::RunPlan& run_plan, parallel::ProcessGrid& grid,
                               std::int64_t k = 0) {
  gpt::GptPartition p;
  p.tp = tensor_parallel_group(grid.tp_comm());
  p.recompute = recompute_from_string(c.strategy.recompute);
  p.sequence_parallel = c.strategy.sequence_parallel;
  p.gradient_residency = gradient_residency(c);
  p.parameter_residency = parameter_residency(c);
  p.master_residency = master_residency(c);
  if (grid.pp() == 1) return p;
  const int stage = grid.pp_rank();
  const plan::StagePlan& chunk = run_plan.chunk(stage, k);
  p.layer_begin = chunk.unit_begin;
  p.layer_end = chunk.unit_end;
  p.embedding = stage == 0 && k == 0;
  p.head = stage + 1 == grid.pp() && k + 1 == run_plan.interleave;
  p.activation_slots = chunk.in_flight;
  return p;
}

// Under interleaving: the parameters, fp32 master weights (16-bit S) and gradients of every
// chunk of this rank in one allocation each, chunk after chunk, so that the optimizer, the
// data-parallel exchange and checkpoints see one flat span as with one model. Empty with one
// chunk (the model allocates its own).
template <class S>
struct ChunkParameters {
  std::vector<std::int64_t> offsets{0};  // floats before chunk k; the last entry the total
  TrackedBuffer params, master, grads;

  ChunkParameters(const plan::TrainConfig& c, const gpt::GptConfig& g, const plan::RunPlan& run_plan,
                  parallel::ProcessGrid& grid, kernels::Backend backend, MemoryTracker& tracker) {
    if (grid.pp() == 1 || run_plan.interleave == 1) return;
    for (std::int64_t k = 0; k < run_plan.interleave; ++k)
      offsets.push_back(offsets.back() + gpt::gpt_shard_parameter_count(
                                             g, gpt::resolve_gpt_partition(g, partition_of(c, run_plan, grid, k))));
    const Device device = kernels::memory_device(backend);
    const std::int64_t n = offsets.back();
    constexpr bool mixed = !std::is_same_v<S, float>;
    params = TrackedBuffer(tracker, MemoryCategory::params, n * static_cast<std::int64_t>(sizeof(S)),
                           mixed ? "gpt 16-bit params" : "gpt params", device);
    if (mixed)
      master = TrackedBuffer(tracker, MemoryCategory::optimizer, n * 4, "gpt fp32 master params", device,
                             master_residency(c));
    grads = TrackedBuffer(tracker, gradient_buffer_category(gradient_residency(c)), n * 4, "gpt grads", device,
                          gradient_residency(c));
  }
  bool shared() const { return offsets.size() > 1; }
  gpt::GptParameterStorageT<S> of(std::int64_t k) const {
    if (!shared()) return {};
    const auto at = offsets[static_cast<std::size_t>(k)];
    return {params.as<S>() + at, master.data() ? master.as<float>() + at : nullptr, grads.as<float>() + at};
  }
  std::span<float> parameters() const {
    return {master.data() ? master.as<float>() : static_cast<float*>(params.data()),
            static_cast<std::size_t>(offsets.back())};
  }
  std::span<float> gradients() const { return {grads.as<float>(), static_cast<std::size_t>(offsets.back())}; }
};

// S: the model's storage (float, or bf16/fp16 under mixed precision), also the type of the
// activations and gradients pipeline stages exchange.
template <class S>
class LanguageModelTask final : public TrainingTask {
 public:
  LanguageModelTask(const plan::TrainConfig& c, const plan::RunPlan& run_plan, kernels::Backend backend,
                    MemoryTracker& tracker, parallel::ProcessGrid& grid)
      : config_(c),
        plan_(run_plan),
        shard_{grid.dp_rank(), grid.dp()},
        grid_(grid),
        model_config_(plan::gpt_config_of(c)),
        T_(run_plan.seq_len),
        micro_(run_plan.micro_batch),
        corpus_(load_corpus(c, model_config_, T_)),
        chunk_parameters_(c, model_config_, run_plan, grid, backend, tracker),
        model_(model_config_, micro_, T_, backend, tracker, partition_of(c, run_plan, grid), 0, nullptr,
               chunk_parameters_.of(0)),
        kernels_(kernels::kernels_for(backend)),
        train_windows_(corpus_.train(), c.global_batch, T_, c.seed),
        heldout_eval_(corpus_.heldout(), micro_, T_, 0),
        train_eval_(corpus_.train(), micro_, T_, 0),
        tokens_(static_cast<std::size_t>(c.global_batch * T_)),
        targets_(tokens_.size()) {
    for (std::int64_t k = 1; k < (grid.pp() > 1 ? run_plan.interleave : 1); ++k)
      more_chunks_.push_back(std::make_unique<gpt::GptModelT<S>>(model_config_, micro_, T_, backend, tracker,
                                                                 partition_of(c, run_plan, grid, k), 0, nullptr,
                                                                 chunk_parameters_.of(k)));
    for_each_chunk([&](gpt::GptModelT<S>& chunk) { chunk.init_weights(c.seed); });
    if (grid.pp() > 1) {
      std::vector<PipelineStage*> stages;
      for_each_chunk([&](gpt::GptModelT<S>& chunk) {
        stages_.push_back(std::make_unique<GptPipelineStageT<S>>(chunk, micro_, T_, tracker));
        stages.push_back(stages_.back().get());
      });
      executor_ = std::make_unique<PipelineExecutor>(grid.pp_comm(), std::move(stages), run_plan.schedule,
                                                     run_plan.micro_batches, tracker);
      if (holds_tied_embedding()) tied_scratch_.resize(tied_chunk().tied_embedding_gradient().size());
      stage_activation_.resize(static_cast<std::size_t>(micro_ * T_ * model_config_.channels));
    }
  }

  std::string model_name() const override { return model_config_.name; }
  std::string dataset_name() const override { return corpus_.name(); }
  std::int64_t parameter_count() const override { return gpt::gpt_parameter_count(model_config_); }
  std::int64_t seq_len() const override { return T_; }
  std::int64_t tokens_per_step() const override { return config_.global_batch * T_; }
  std::int64_t steps_per_epoch() const override {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(corpus_.train().size()) / tokens_per_step());
  }
  double flops_per_step() const override { return gpt::gpt_training_flops(model_config_, config_.global_batch, T_); }
  std::vector<optim::ParameterSlice> parameter_slices() override {
    std::vector<optim::ParameterSlice> slices;
    for_each_chunk([&](gpt::GptModelT<S>& chunk) {
      for (optim::ParameterSlice& slice : chunk.parameter_slices()) slices.push_back(std::move(slice));
    });
    return slices;
  }
  // qkvw (L·3C, C), attprojw (L·C, C), fcw (L·4C, C), fcprojw (L·C, 4C); whole model only
  std::vector<compress::WeightMatrix> weight_matrices() override {
    if (grid_.tp() > 1 || grid_.pp() > 1) return {};
    const gpt::GptConfig& g = model_config_;
    const std::int64_t L = g.layers, C = g.channels;
    std::vector<compress::WeightMatrix> matrices;
    for (const gpt::ParameterView& v : model_.parameter_views()) {
      if (v.name == "qkvw") matrices.push_back({v.name, v.param, L * 3 * C, C});
      if (v.name == "attprojw") matrices.push_back({v.name, v.param, L * C, C});
      if (v.name == "fcw") matrices.push_back({v.name, v.param, L * 4 * C, C});
      if (v.name == "fcprojw") matrices.push_back({v.name, v.param, L * C, 4 * C});
    }
    for (const compress::WeightMatrix& m : matrices)
      SB_CHECK(m.numel() > 0, "weight matrix {} of gpt {} is empty", m.name, g.name);
    return matrices;
  }
  Device device() const override { return model_.device(); }
  std::span<float> parameters_flat() override {
    return chunk_parameters_.shared() ? chunk_parameters_.parameters() : model_.parameters_flat();
  }
  std::span<float> gradients_flat() override {
    return chunk_parameters_.shared() ? chunk_parameters_.gradients() : model_.gradients_flat();
  }
  TrackedBuffer* gradient_pages() override {
    TrackedBuffer& own = chunk_parameters_.shared() ? chunk_parameters_.grads : model_.gradient_memory();
    return own.residency() == Residency::resident_pages ? &own : nullptr;
  }
  TrackedBuffer* parameter_pages() override {
    TrackedBuffer& own = model_.parameter_memory();
    return !chunk_parameters_.shared() && own.residency() == Residency::resident_pages ? &own : nullptr;
  }
  TrackedBuffer* master_pages() override {
    TrackedBuffer& master = chunk_parameters_.shared() ? chunk_parameters_.master : model_.master_memory();
    return master.data() && master.residency() == Residency::resident_pages ? &master : nullptr;
  }
  std::span<std::byte> sixteen_bit_parameters() override {
    if constexpr (std::is_same_v<S, float>) return {};
    const TrackedBuffer& params = chunk_parameters_.shared() ? chunk_parameters_.params : model_.parameter_memory();
    return {params.as<std::byte>(), static_cast<std::size_t>(params.bytes())};
  }
  void narrow_to_storage(std::span<const float> in, std::byte* out) override {
    model_.narrow_to_storage(in, reinterpret_cast<S*>(out));
  }
  void set_unit_parameter_gather(UnitParameterGather* gather) override {
    SB_CHECK(more_chunks_.empty(), "zero-3 with {} model chunks", more_chunks_.size() + 1);
    model_.set_unit_parameter_gather(gather);
  }
  void parameters_updated() override {
    for_each_chunk([](gpt::GptModelT<S>& chunk) { chunk.sync_storage_parameters(); });
  }
  void set_loss_scale(double scale) override {
    for_each_chunk([scale](gpt::GptModelT<S>& chunk) { chunk.set_loss_scale(scale); });
  }
  // slot 0 holds the last micro-batch's forward (without a pipeline: every one's, in turn)
  std::vector<NamedValues> forward_values() override { return model_.forward_values(0); }
  std::vector<NamedValues> gradient_values() override {
    return more_chunks_.empty() ? model_.gradient_values() : TrainingTask::gradient_values();
  }

  // Every rank draws the same global batch of windows and trains its own rows of it.
  double forward_backward(std::int64_t step) override {
    train_windows_.training_batch(step, tokens_.data(), targets_.data());
    sum_sequence_parallel_gradients_in_the_sync();
    if (!reduces_every_micro_batch(sync_)) for_each_chunk([](gpt::GptModelT<S>& chunk) { chunk.zero_grad(); });
    const std::int64_t local = plan_.local_batch;
    const std::int64_t accumulation = local / micro_;
    if (executor_) return pipeline_forward_backward(local, accumulation);
    double loss = 0;
    for (std::int64_t m = 0; m < accumulation; ++m) {
      const auto offset = static_cast<std::size_t>((shard_.rank * local + m * micro_) * T_);
      loss += model_.forward(tokens_.data() + offset, targets_.data() + offset, micro_, T_);
      if (reports_gradients(sync_, m, accumulation))
        model_.set_gradient_ready_callback([this](std::int64_t o, std::int64_t n) { sync_->ready(o, n); });
      model_.backward();
      model_.set_gradient_ready_callback({});
      if (sync_ && m + 1 < accumulation) sync_->micro_batch_done();
    }
    finish_gradients_over_both_groups(accumulation);
    return loss / static_cast<double>(accumulation);
  }

  std::vector<EvalResult> evaluate() override {
    return {evaluate_split("heldout", heldout_eval_), evaluate_split("train", train_eval_)};
  }

  PipelineTimes pipeline_times() const override { return pipeline_times_; }

  // Calibration: calibration_batches micro-batches of evenly spaced training windows; evaluation:
  // the held-out windows evaluate() reads (eval_batches global batches).
  compress::QuantizationReport quantize_int8(std::int64_t calibration_batches) override {
    if constexpr (std::is_same_v<S, float>) {
      SB_CHECK(model_.shard().embedding && model_.shard().head, "int8 quantisation needs the whole model");
      const std::int64_t eval_batches = config_.eval_batches * config_.global_batch / micro_;
      return compress::quantize_gpt_int8(
          model_,
          [&](std::int64_t i, std::int32_t* x, std::int32_t* y) { train_eval_.evaluation_batch(i, calibration_batches, x, y); },
          calibration_batches,
          [&](std::int64_t i, std::int32_t* x, std::int32_t* y) { heldout_eval_.evaluation_batch(i, eval_batches, x, y); },
          eval_batches, micro_, T_);
    } else {
      throw UserError(fmt::format("{}: 'compress.quantize: int8' quantises an fp32 model", config_.source));
    }
  }

 private:
  // One step of this rank's stage under the pipeline schedule; the loss is the last stage's.
  double pipeline_forward_backward(std::int64_t local, std::int64_t accumulation) {
    const auto offset = static_cast<std::size_t>(shard_.rank * local * T_);
    for (std::size_t k = 0; k < stages_.size(); ++k)
      stages_[k]->set_batch(tokens_.data() + offset, targets_.data() + offset,
                            sync_around_backward(chunk(k), accumulation, chunk_parameters_.offsets[k]));
    const PipelineStepFigures figures = executor_->run_step();
    pipeline_times_ = {figures.p2p_s, figures.bubble_s(), figures.ops};
    // The two copies of the tied embedding take the sum of their gradients: after the
    // data-parallel exchange, whose buckets took each copy's as backward finished it; before it
    // under ZeRO-1, which leaves each rank only its shard of the reduced gradients (the sums
    // commute).
    const bool sharded = config_.strategy.zero >= 1;
    if (sharded) sum_tied_gradient_if_held();
    finish_gradients_over_both_groups(accumulation);
    if (!sharded) sum_tied_gradient_if_held();
    return from_last_stage(grid_.pp_comm(), figures.loss);
  }
  // Under 16-bit main gradients the copies' sums are those the optimizer reads, 16-bit ones.
  void sum_tied_gradient_if_held() {
    if (!holds_tied_embedding()) return;
    const std::span<float> tied = tied_chunk().tied_embedding_gradient();
    const GradientSync::SixteenBitGradients main =
        sync_ ? sync_->sixteen_bit_gradients(tied.data() - gradients_flat().data(), static_cast<std::int64_t>(tied.size()))
              : GradientSync::SixteenBitGradients{};
    if (!main.bits.empty())
      sum_tied_sixteen_bit_gradient(grid_.pp_comm(), main.bits, main.type);
    else
      sum_tied_gradient(grid_.pp_comm(), tied, model_.device(), tied_scratch_);
  }

  // Under sequence parallelism the LayerNorm gradients (each tp rank's from its own rows) are
  // summed over the tp ranks: by the wrapped data-parallel sync as backward reports them
  // (sequence_parallel_gradient_sum.hpp), or without one after backward.
  void finish_gradients_over_both_groups(std::int64_t accumulation) {
    finish_gradients(sync_, kernels_, gradients_flat(), accumulation);
    if (sync_) return;
    for_each_chunk([this](gpt::GptModelT<S>& chunk) {
      sum_over_tensor_parallel(grid_.tp_comm(), chunk.sequence_parallel_gradients());
    });
  }
  // The data-parallel sync wrapped once in the tp sum of the sequence-parallel gradients.
  void sum_sequence_parallel_gradients_in_the_sync() {
    if (!model_.shard().sequence_parallel || !sync_ || sync_ == sequence_parallel_sum_.get()) return;
    std::vector<std::span<float>> summed;
    for_each_chunk([&summed](gpt::GptModelT<S>& chunk) {
      for (const std::span<float>& range : chunk.sequence_parallel_gradients()) summed.push_back(range);
    });
    sequence_parallel_sum_ =
        std::make_unique<SequenceParallelGradientSum>(grid_.tp_comm(), *sync_, gradients_flat(), summed);
    sync_ = sequence_parallel_sum_.get();
  }

  // Local chunk k of this rank's model (0 without interleaving), and each in turn.
  gpt::GptModelT<S>& chunk(std::size_t k) { return k == 0 ? model_ : *more_chunks_[k - 1]; }
  template <class F>
  void for_each_chunk(F&& f) {
    f(model_);
    for (const auto& more : more_chunks_) f(*more);
  }
  // The chunk with the head: the model's last (local chunk v − 1 on the last stage).
  const gpt::GptModelT<S>& head_chunk() const { return more_chunks_.empty() ? model_ : *more_chunks_.back(); }
  gpt::GptModelT<S>& head_chunk() { return more_chunks_.empty() ? model_ : *more_chunks_.back(); }
  // The first and the last stage each hold the tied token embedding (wte); middle stages do not.
  bool holds_tied_embedding() const { return model_.shard().embedding || head_chunk().shard().head; }
  gpt::GptModelT<S>& tied_chunk() { return model_.shard().embedding ? model_ : head_chunk(); }

  // The index of each row's largest logit over the whole vocabulary (the first, on ties): this
  // rank's rows are [vocab_begin, vocab_begin + V_r); the maxima meet over the tp group.
  void predictions(std::int64_t rows, std::vector<std::int32_t>& predicted) {
    const gpt::GptModelT<S>& head = head_chunk();
    const gpt::GptShard& sh = head.shard();
    const std::vector<S> staged = copy_to_host(std::span<const S>(head.logits(), static_cast<std::size_t>(rows * sh.V_tp)),
                                               head.device());
    const S* logits = staged.data();
    std::vector<float> best(static_cast<std::size_t>(rows));
    predicted.resize(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const S* row = logits + r * sh.V_tp;
      const S* top = std::max_element(row, row + sh.V_tp, [](S a, S b) {
        return kernels::widen_value(a) < kernels::widen_value(b);
      });
      best[static_cast<std::size_t>(r)] = kernels::widen_value(*top);
      predicted[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(sh.vocab_begin + (top - row));
    }
    if (grid_.tp() == 1) return;
    std::vector<float> global_best = best;
    grid_.tp_comm().all_reduce(std::span<float>(global_best), parallel::ReduceOp::max);
    for (std::size_t r = 0; r < best.size(); ++r)
      if (best[r] != global_best[r]) predicted[r] = INT_MAX;
    grid_.tp_comm().all_reduce(std::span<std::int32_t>(predicted), parallel::ReduceOp::min);
  }

  static data::TextCorpus load_corpus(const plan::TrainConfig& c, const gpt::GptConfig& model, std::int64_t T) {
    SB_USER_CHECK(c.data.dataset == "sotu",
                  "{}: model {} trains on text (data: sotu, or spam-assassin as a classifier), not '{}'", c.source,
                  model.name, c.data.dataset);
    SB_USER_CHECK(c.optimizer.type == "adamw", "{}: the GPT trains with optimizer.type adamw, not '{}'", c.source,
                  c.optimizer.type);
    SB_USER_CHECK(model.vocab >= 256, "{}: byte-level text needs model.vocab >= 256, got {}", c.source, model.vocab);
    SB_USER_CHECK(T <= model.max_seq_len, "{}: seq_len {} exceeds the model's maximum sequence length {}", c.source,
                  T, model.max_seq_len);
    return data::load_sotu(c.data.path);
  }

  // Mean next-byte loss and top-1 accuracy over eval_batches global batches of evenly spaced
  // windows, evaluated a micro-batch at a time: the same windows whatever dp and batch.micro.
  EvalResult evaluate_split(const std::string& split, const data::WindowSampler& sampler) {
    EvalResult r{split, 0, 0};
    std::int64_t correct = 0;
    const std::int64_t batches = config_.eval_batches * config_.global_batch / micro_;
    std::vector<std::int32_t> predicted;
    for (std::int64_t i = 0; i < batches; ++i) {
      sampler.evaluation_batch(i, batches, tokens_.data(), targets_.data());
      // through this rank's chunks in model order (under interleaving the last stage's chunk k
      // feeds the first stage's chunk k + 1)
      double loss = 0;
      bool last = true;
      for (std::size_t k = 0; k < std::max<std::size_t>(1, stages_.size()); ++k) {
        const bool first = chunk(k).shard().embedding;
        last = chunk(k).shard().head;
        if (!first) receive_from_previous_stage(grid_.pp_comm(), std::as_writable_bytes(std::span(stage_activation_)));
        // a pipeline stage stages what crosses stages through host memory (on device cuda)
        loss = stages_.empty() ? model_.forward(tokens_.data(), targets_.data(), micro_, T_)
                               : stages_[k]->forward_rows(tokens_.data(), stage_activation_.data(), targets_.data());
        if (!last)
          send_to_next_stage(grid_.pp_comm(), std::span(static_cast<const std::byte*>(stages_[k]->output(0)),
                                                        stage_activation_.size() * sizeof(S)));
      }
      if (!last) continue;
      r.loss += loss;
      predictions(micro_ * T_, predicted);
      for (std::int64_t bt = 0; bt < micro_ * T_; ++bt)
        correct += predicted[static_cast<std::size_t>(bt)] == targets_[static_cast<std::size_t>(bt)];
    }
    r.loss = from_last_stage(grid_.pp_comm(), r.loss / static_cast<double>(batches));
    r.accuracy = from_last_stage(grid_.pp_comm(),
                                 static_cast<double>(correct) / static_cast<double>(batches * micro_ * T_));
    return r;
  }

  plan::TrainConfig config_;
  plan::RunPlan plan_;
  DataShard shard_;
  std::unique_ptr<SequenceParallelGradientSum> sequence_parallel_sum_;  // wraps sync_ under tp with sp
  parallel::ProcessGrid& grid_;
  gpt::GptConfig model_config_;
  std::int64_t T_, micro_;
  data::TextCorpus corpus_;
  ChunkParameters<S> chunk_parameters_;
  gpt::GptModelT<S> model_;  // local chunk 0
  std::vector<std::unique_ptr<gpt::GptModelT<S>>> more_chunks_;  // local chunks 1 .. v − 1 (interleaving)
  const kernels::KernelTable& kernels_;
  data::WindowSampler train_windows_, heldout_eval_, train_eval_;
  std::vector<std::int32_t> tokens_, targets_;
  // pipeline parallel only
  std::vector<std::unique_ptr<GptPipelineStageT<S>>> stages_;  // per local chunk
  std::unique_ptr<PipelineExecutor> executor_;
  std::vector<float> tied_scratch_;
  std::vector<S> stage_activation_;  // (micro, T, C) an evaluation forward's input from the previous stage
  PipelineTimes pipeline_times_;
};

}  // namespace

std::unique_ptr<TrainingTask> make_language_model_task(const plan::TrainConfig& config, const plan::RunPlan& run_plan,
                                                       kernels::Backend backend, MemoryTracker& tracker,
                                                       parallel::ProcessGrid& grid) {
  const std::string& precision = config.precision.dtype;
  if (precision == "bf16") return std::make_unique<LanguageModelTask<bf16>>(config, run_plan, backend, tracker, grid);
  if (precision == "fp16") return std::make_unique<LanguageModelTask<fp16>>(config, run_plan, backend, tracker, grid);
  return std::make_unique<LanguageModelTask<float>>(config, run_plan, backend, tracker, grid);
}

}  // namespace sb::train
