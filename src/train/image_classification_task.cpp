// SPDX-License-Identifier: Apache-2.0
// ResNet on labelled images: per-epoch shuffled batches, gradient accumulation over
// micro-batches, test-set and training-subset evaluation with BatchNorm in eval mode; under
// pipeline parallelism one stage driven by the pipeline executor (under interleaving, v model
// chunks whose parameters share one allocation).
#include <algorithm>
#include <memory>
#include <optional>
#include <type_traits>

#include "core/check.hpp"
#include "data/image_dataset.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "train/model_parallel_plumbing.hpp"
#include "train/pipeline_executor.hpp"
#include "train/resnet_pipeline_stage.hpp"
#include "train/checkpoint.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

// This rank's local chunk k (0: its stage without interleaving): its units (stem, blocks, head)
// as the plan assigns them.
resnet::ResnetPartition partition_of(const plan::RunPlan& run_plan, int stage, std::int64_t k = 0) {
  if (run_plan.pp == 1) return {};
  const plan::StagePlan& mine = run_plan.chunk(stage, k);
  return {mine.unit_begin, mine.unit_end};
}

// Under interleaving: the weights, fp32 master weights (16-bit S), gradients and BatchNorm
// running statistics of every chunk of this rank in one allocation each, chunk after chunk, so
// that the optimizer, the data-parallel exchange and checkpoints see one flat span as with one
// model. Empty with one chunk (the model allocates its own).
template <class S>
struct ResnetChunkParameters {
  std::vector<std::int64_t> offsets{0}, statistics_offsets{0};  // before chunk k; the last entry the total
  TrackedBuffer params, master, grads, statistics;

  ResnetChunkParameters(const plan::TrainConfig& c, const resnet::ResnetConfig& r, const plan::RunPlan& run_plan,
                        parallel::ProcessGrid& grid, MemoryTracker& tracker) {
    if (grid.pp() == 1 || run_plan.interleave == 1) return;
    for (std::int64_t k = 0; k < run_plan.interleave; ++k) {
      const resnet::ResnetPartition partition = partition_of(run_plan, grid.pp_rank(), k);
      offsets.push_back(offsets.back() + resnet::resnet_partition_parameter_count(r, partition));
      statistics_offsets.push_back(statistics_offsets.back() + resnet::resnet_partition_statistics_count(r, partition));
    }
    const std::int64_t n = offsets.back();
    constexpr bool mixed = !std::is_same_v<S, float>;
    params = TrackedBuffer(tracker, MemoryCategory::params, n * static_cast<std::int64_t>(sizeof(S)),
                           mixed ? "resnet 16-bit params" : "resnet params", Device::cpu, parameter_residency(c));
    if (mixed)
      master = TrackedBuffer(tracker, MemoryCategory::optimizer, n * 4, "resnet fp32 master params", Device::cpu,
                             master_residency(c));
    grads = TrackedBuffer(tracker, gradient_buffer_category(gradient_residency(c)), n * 4, "resnet grads",
                          Device::cpu, gradient_residency(c));
    statistics = TrackedBuffer(tracker, MemoryCategory::params, statistics_offsets.back() * 4,
                               "resnet running statistics");
  }
  bool shared() const { return offsets.size() > 1; }
  resnet::ResnetParameterStorageT<S> of(std::int64_t k) const {
    if (!shared()) return {};
    const auto at = offsets[static_cast<std::size_t>(k)];
    return {params.as<S>() + at, master.data() ? master.as<float>() + at : nullptr, grads.as<float>() + at,
            statistics.as<float>() + statistics_offsets[static_cast<std::size_t>(k)]};
  }
  std::span<float> parameters() const {
    return {master.data() ? master.as<float>() : static_cast<float*>(params.data()),
            static_cast<std::size_t>(offsets.back())};
  }
  std::span<float> gradients() const { return {grads.as<float>(), static_cast<std::size_t>(offsets.back())}; }
  std::span<float> running_statistics() const {
    return {statistics.as<float>(), static_cast<std::size_t>(statistics_offsets.back())};
  }
};

// S: the model's storage (float, or bf16/fp16 under mixed precision), also the type of the
// activations and gradients pipeline stages exchange.
template <class S>
class ImageClassificationTask final : public TrainingTask {
 public:
  ImageClassificationTask(const plan::TrainConfig& c, const plan::RunPlan& run_plan, kernels::Backend backend,
                          MemoryTracker& tracker, parallel::ProcessGrid& grid)
      : config_(c),
        plan_(run_plan),
        shard_{grid.dp_rank(), grid.dp()},
        grid_(grid),
        model_config_(resnet::resnet_config_by_name(c.model.name)),
        micro_(run_plan.micro_batch),
        train_(load(c, "train")),
        test_(load(c, "test")),
        chunk_parameters_(c, model_config_, run_plan, grid, tracker),
        model_(model_config_, micro_, backend, tracker, partition_of(run_plan, grid.pp_rank()),
               run_plan.stage(grid.pp_rank()).in_flight, nullptr, gradient_residency(c),
               recompute_from_string(c.strategy.recompute), master_residency(c), parameter_residency(c),
               chunk_parameters_.of(0)),
        kernels_(kernels::kernels_for(backend)),
        train_batches_(train_, c.global_batch, c.seed, true),
        images_(static_cast<std::size_t>(c.global_batch * train_.image_size())),
        labels_(static_cast<std::size_t>(c.global_batch)) {
    SB_USER_CHECK(train_.height == model_config_.image_size && train_.channels == model_config_.image_channels,
                  "{}: {} takes {}×{} images with {} channel(s) but {} has {}×{} with {}", c.source,
                  model_config_.name, model_config_.image_size, model_config_.image_size, model_config_.image_channels,
                  train_.name, train_.height, train_.width, train_.channels);
    for (std::int64_t k = 1; k < (grid.pp() > 1 ? run_plan.interleave : 1); ++k)
      more_chunks_.push_back(std::make_unique<resnet::ResnetModelT<S>>(
          model_config_, micro_, backend, tracker, partition_of(run_plan, grid.pp_rank(), k),
          run_plan.chunk(grid.pp_rank(), k).in_flight, nullptr, gradient_residency(c),
          recompute_from_string(c.strategy.recompute), master_residency(c), parameter_residency(c),
          chunk_parameters_.of(k)));
    for_each_chunk([&](resnet::ResnetModelT<S>& chunk) { chunk.init_weights(c.seed); });
    if (!c.distill.teacher.empty()) load_teacher(c, backend, tracker);
    if (grid.pp() > 1) {
      std::vector<PipelineStage*> stages;
      std::int64_t largest_input = 0;
      for_each_chunk([&](resnet::ResnetModelT<S>& chunk) {
        stages_.push_back(std::make_unique<ResnetPipelineStageT<S>>(chunk, micro_));
        stages.push_back(stages_.back().get());
        largest_input = std::max(largest_input, chunk.input_floats_per_image());
      });
      executor_ = std::make_unique<PipelineExecutor>(grid.pp_comm(), std::move(stages), run_plan.schedule,
                                                     run_plan.micro_batches, tracker);
      stage_activation_.resize(static_cast<std::size_t>(micro_ * largest_input));
    }
  }

  std::string model_name() const override { return model_config_.name; }
  std::string dataset_name() const override { return config_.data.dataset; }
  // The whole network's (a pipeline stage holds a part), as the GPT's.
  std::int64_t parameter_count() const override { return resnet::resnet_parameter_count(model_config_); }
  std::int64_t seq_len() const override { return 0; }
  std::int64_t tokens_per_step() const override { return 0; }
  std::int64_t steps_per_epoch() const override { return train_.count / config_.global_batch; }
  double flops_per_step() const override { return resnet::resnet_training_flops(model_config_, config_.global_batch); }
  // Chunk after chunk, as the flat spans below.
  std::vector<optim::ParameterSlice> parameter_slices() override {
    std::vector<optim::ParameterSlice> slices;
    for_each_chunk([&](resnet::ResnetModelT<S>& chunk) {
      for (optim::ParameterSlice& slice : chunk.parameter_slices()) slices.push_back(std::move(slice));
    });
    return slices;
  }
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
  void set_unit_parameter_gather(UnitParameterGather* gather) override {
    SB_CHECK(more_chunks_.empty(), "zero-3 with {} model chunks", more_chunks_.size() + 1);
    model_.set_unit_parameter_gather(gather);
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
  std::span<float> untrained_state_flat() override {
    return chunk_parameters_.shared() ? chunk_parameters_.running_statistics() : model_.running_statistics_flat();
  }
  void parameters_updated() override {
    for_each_chunk([](resnet::ResnetModelT<S>& chunk) { chunk.sync_storage_parameters(); });
  }
  void set_loss_scale(double scale) override {
    for_each_chunk([scale](resnet::ResnetModelT<S>& chunk) { chunk.set_loss_scale(scale); });
  }
  void synchronise_batchnorm(std::function<void(std::span<double>)> all_reduce_sum) override {
    for_each_chunk([&](resnet::ResnetModelT<S>& chunk) { chunk.set_batchnorm_reducer(all_reduce_sum); });
  }

  // Every rank draws the same shuffled global batch and trains its own images of it.
  double forward_backward(std::int64_t step) override {
    train_batches_.batch(step, images_.data(), labels_.data());
    if (!reduces_every_micro_batch(sync_)) for_each_chunk([](resnet::ResnetModelT<S>& chunk) { chunk.zero_grad(); });
    const std::int64_t local = plan_.local_batch;
    const std::int64_t accumulation = local / micro_;
    const std::int64_t image_size = train_.image_size();
    if (executor_) return pipeline_forward_backward(local, accumulation);
    double loss = 0;
    for (std::int64_t m = 0; m < accumulation; ++m) {
      const std::int64_t first = shard_.rank * local + m * micro_;
      if (teacher_) set_teacher_targets(images_.data() + first * image_size);
      loss += model_.forward(images_.data() + first * image_size, labels_.data() + first, micro_, true);
      if (reports_gradients(sync_, m, accumulation))
        model_.set_gradient_ready_callback([this](std::int64_t o, std::int64_t n) { sync_->ready(o, n); });
      model_.backward();
      model_.set_gradient_ready_callback({});
      if (sync_ && m + 1 < accumulation) sync_->micro_batch_done();
      if (teacher_) model_.set_soft_targets({});  // evaluation reports the plain cross-entropy
    }
    finish_gradients(sync_, kernels_, model_.gradients_flat(), accumulation);
    return loss / static_cast<double>(accumulation);
  }

  // The test set (its first data.test_samples where given), and as many training images as
  // eval_batches global batches hold.
  std::vector<EvalResult> evaluate() override {
    return {evaluate_split("test", test_, test_.count),
            evaluate_split("train", train_, std::min(train_.count, config_.eval_batches * config_.global_batch))};
  }

  PipelineTimes pipeline_times() const override { return pipeline_times_; }

  // Every convolution (OC, IC·KH·KW) and the fc (classes, 64), whole network only.
  std::vector<compress::WeightMatrix> weight_matrices() override {
    if (grid_.pp() > 1) return {};
    const std::vector<resnet::ParameterSpec> specs = resnet::resnet_parameter_specs(model_config_);
    const std::vector<resnet::ParameterView> views = model_.parameter_views();
    SB_CHECK(specs.size() == views.size(), "{} parameter specs for {} tensors", specs.size(), views.size());
    std::vector<compress::WeightMatrix> matrices;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      if (specs[k].shape.rank() < 2) continue;
      const std::int64_t rows = specs[k].shape[0];
      matrices.push_back({views[k].name, views[k].param, rows, views[k].numel / rows});
    }
    return matrices;
  }
  bool is_head_parameter(const std::string& name) const override { return name.rfind("fc.", 0) == 0; }
  // Calibration: the first calibration_batches micro-batches of the training images, unshuffled;
  // evaluation: the whole test set.
  compress::QuantizationReport quantize_int8(std::int64_t calibration_batches) override {
    if constexpr (std::is_same_v<S, float>) {
      SB_CHECK(model_.has_stem() && model_.has_head(), "int8 quantisation needs the whole network");
      const compress::ImageSet calibration{train_.images.data(), train_.labels.data(), train_.count,
                                           train_.image_size()};
      const compress::ImageSet test{test_.images.data(), test_.labels.data(), test_.count, test_.image_size()};
      return compress::quantize_resnet_int8(model_, calibration, calibration_batches, test);
    } else {
      throw UserError(fmt::format("{}: 'compress.quantize: int8' quantises an fp32 model", config_.source));
    }
  }

  // The whole test set for accuracy; throughput over its first kTimingImages images, kTimingRounds
  // passes each way (a few seconds on two cores).
  std::optional<compress::SparseInferenceReport> sparse_inference(const compress::StoredWeights& stored) override {
    if constexpr (std::is_same_v<S, float>) {
      if (memory_device(model_.backend()) != Device::cpu || !model_.has_stem() || !model_.has_head())
        return std::nullopt;
      constexpr std::int64_t kTimingRounds = 3, kTimingImages = 2048;
      const compress::ImageSet test{test_.images.data(), test_.labels.data(), test_.count, test_.image_size()};
      return compress::sparse_resnet_inference(model_, stored, test, kTimingRounds, kTimingImages);
    } else {
      return std::nullopt;
    }
  }
  std::int64_t auxiliary_parameter_bytes() const override { return teacher_bytes_; }

 private:
  // One step of this rank's stage under the pipeline schedule; the loss is the last stage's.
  double pipeline_forward_backward(std::int64_t local, std::int64_t accumulation) {
    const std::int64_t first = shard_.rank * local;
    for (std::size_t k = 0; k < stages_.size(); ++k)
      stages_[k]->set_batch(images_.data() + first * train_.image_size(), labels_.data() + first,
                            sync_around_backward(chunk(k), accumulation, chunk_parameters_.offsets[k]));
    const PipelineStepFigures figures = executor_->run_step();
    pipeline_times_ = {figures.p2p_s, figures.bubble_s(), figures.ops};
    finish_gradients(sync_, kernels_, gradients_flat(), accumulation);
    return from_last_stage(grid_.pp_comm(), figures.loss);
  }

  // distill.teacher: a trained model of distill.teacher_model from its checkpoint, evaluated
  // (running BatchNorm statistics) on each micro-batch before the student's forward.
  void load_teacher(const plan::TrainConfig& c, kernels::Backend backend, MemoryTracker& tracker) {
    SB_USER_CHECK(grid_.pp() == 1 && c.precision.dtype == "fp32",
                  "{}: distill runs fp32 without pipeline stages so far (precision {}, pp {})", c.source,
                  c.precision.dtype, grid_.pp());
    const resnet::ResnetConfig teacher_config = resnet::resnet_config_by_name(c.distill.teacher_model);
    SB_USER_CHECK(teacher_config.classes == model_config_.classes && !teacher_config.spec_only &&
                      teacher_config.image_size == model_config_.image_size &&
                      teacher_config.image_channels == model_config_.image_channels,
                  "{}: distill.teacher_model {} does not classify {}'s images into its {} classes", c.source,
                  teacher_config.name, model_config_.name, model_config_.classes);
    teacher_.emplace(teacher_config, micro_, backend, tracker);
    const SavedWeights saved = read_saved_weights(c.distill.teacher, teacher_config.name, "distill.teacher", c.source);
    const std::span<float> parameters = teacher_->parameters_flat(), statistics = teacher_->running_statistics_flat();
    SB_USER_CHECK(saved.parameters.size() == parameters.size() && saved.untrained_state.size() == statistics.size(),
                  "{}: distill.teacher {} holds {} parameters and {} statistics, {} has {} and {}", c.source,
                  c.distill.teacher, saved.parameters.size(), saved.untrained_state.size(), teacher_config.name,
                  parameters.size(), statistics.size());
    std::copy(saved.parameters.begin(), saved.parameters.end(), parameters.begin());
    std::copy(saved.untrained_state.begin(), saved.untrained_state.end(), statistics.begin());
    teacher_->sync_storage_parameters();
    teacher_bytes_ = static_cast<std::int64_t>(4 * (parameters.size() + statistics.size()));
    teacher_logits_.resize(static_cast<std::size_t>(micro_ * model_config_.classes));
  }

  // The teacher's logits of one micro-batch become the student's soft targets.
  void set_teacher_targets(const float* images) {
    teacher_->forward(images, nullptr, micro_, false);
    const float* logits = teacher_->logits();
    std::copy(logits, logits + teacher_logits_.size(), teacher_logits_.begin());
    if constexpr (std::is_same_v<S, float>)
      model_.set_soft_targets({teacher_logits_.data(), config_.distill.temperature, config_.distill.alpha});
  }

  // The data set's first n images (n <= d.count).
  static void keep_first(data::ImageDataset& d, std::int64_t n) {
    d.count = n;
    d.images.resize(static_cast<std::size_t>(n * d.image_size()));
    d.labels.resize(static_cast<std::size_t>(n));
  }

  static data::ImageDataset load(const plan::TrainConfig& c, const std::string& split) {
    SB_USER_CHECK(c.optimizer.type == "sgd" || c.optimizer.type == "adamw",
                  "{}: unknown optimizer.type '{}'", c.source, c.optimizer.type);
    SB_USER_CHECK(c.data.dataset == "mnist" || c.data.dataset == "fashion-mnist",
                  "{}: model {} trains on images (data: mnist or fashion-mnist), not '{}'", c.source, c.model.name,
                  c.data.dataset);
    data::ImageDataset d = c.data.dataset == "mnist" ? data::load_mnist(c.data.path, split)
                                                     : data::load_fashion_mnist(c.data.path, split);
    const std::int64_t n = c.data.train_samples;
    if (split == "train" && n > 0) {  // a small labelled subset: the file's first n images
      SB_USER_CHECK(n <= d.count && n >= c.global_batch,
                    "{}: data.train_samples {} must lie between batch.global ({}) and the {} images of {}", c.source,
                    n, c.global_batch, d.count, d.name);
      keep_first(d, n);
    }
    const std::int64_t t = c.data.test_samples;
    if (split == "test" && t > 0) {  // evaluated on the file's first t test images
      SB_USER_CHECK(t <= d.count, "{}: data.test_samples {} exceeds the {} test images of {}", c.source, t, d.count,
                    d.name);
      keep_first(d, t);
    }
    return d;
  }

  resnet::ResnetModelT<S>& chunk(std::size_t k) { return k == 0 ? model_ : *more_chunks_[k - 1]; }
  template <class F>
  void for_each_chunk(F&& f) {
    f(model_);
    for (const auto& more : more_chunks_) f(*more);
  }
  // The last local chunk: the one with the head on the last stage.
  resnet::ResnetModelT<S>& head_chunk() { return more_chunks_.empty() ? model_ : *more_chunks_.back(); }

  EvalResult evaluate_split(const std::string& split, const data::ImageDataset& data, std::int64_t count) {
    data::ImageBatcher batches(data, micro_, 0, false);
    EvalResult r{split, 0, 0};
    std::int64_t correct = 0, seen = 0;
    const std::int64_t classes = model_config_.classes;
    for (std::int64_t b = 0; seen < count; ++b) {
      const std::int64_t n = std::min(batches.batch(b, images_.data(), labels_.data()), count - seen);
      seen += n;
      // through this rank's chunks in model order (under interleaving the last stage's chunk k
      // feeds the first stage's chunk k + 1)
      float loss = 0;
      for (std::size_t k = 0; k <= more_chunks_.size(); ++k) {
        resnet::ResnetModelT<S>& model = chunk(k);
        if (model.has_stem()) {
          loss = model.forward(0, images_.data(), labels_.data(), n, false);
        } else {
          const std::span<S> received(stage_activation_.data(),
                                      static_cast<std::size_t>(n * model.input_floats_per_image()));
          receive_from_previous_stage(grid_.pp_comm(), std::as_writable_bytes(received));
          loss = model.forward_stage(0, received.data(), labels_.data(), n, false);
        }
        if (!model.has_head())
          send_to_next_stage(grid_.pp_comm(), std::as_bytes(std::span(
                                                  model.output(0), static_cast<std::size_t>(n * model.output_floats_per_image()))));
      }
      if (!head_chunk().has_head()) continue;
      r.loss += static_cast<double>(loss) * static_cast<double>(n);
      const S* logits = head_chunk().logits();
      const auto less = [](S a, S b) { return kernels::widen_value(a) < kernels::widen_value(b); };
      for (std::int64_t i = 0; i < n; ++i) {
        const S* row = logits + i * classes;
        correct += std::max_element(row, row + classes, less) - row == labels_[static_cast<std::size_t>(i)];
      }
    }
    r.loss = from_last_stage(grid_.pp_comm(), r.loss / static_cast<double>(seen));
    r.accuracy = from_last_stage(grid_.pp_comm(), static_cast<double>(correct) / static_cast<double>(seen));
    return r;
  }

  plan::TrainConfig config_;
  plan::RunPlan plan_;
  DataShard shard_;
  parallel::ProcessGrid& grid_;
  resnet::ResnetConfig model_config_;
  std::int64_t micro_;
  data::ImageDataset train_, test_;
  ResnetChunkParameters<S> chunk_parameters_;
  resnet::ResnetModelT<S> model_;  // local chunk 0 (the stage without interleaving)
  std::vector<std::unique_ptr<resnet::ResnetModelT<S>>> more_chunks_;  // local chunks 1 .. v − 1 (interleaving)
  const kernels::KernelTable& kernels_;
  data::ImageBatcher train_batches_;
  std::vector<float> images_;
  std::vector<std::int32_t> labels_;
  // distillation only
  std::optional<resnet::ResnetModel> teacher_;
  std::vector<float> teacher_logits_;  // (micro, classes) of the current micro-batch
  std::int64_t teacher_bytes_ = 0;     // its tracked parameters and running statistics, fp32
  // pipeline parallel only
  std::vector<std::unique_ptr<ResnetPipelineStageT<S>>> stages_;  // per local chunk
  std::unique_ptr<PipelineExecutor> executor_;
  std::vector<S> stage_activation_;  // (micro, largest in_floats) an evaluation forward's input from the previous stage
  PipelineTimes pipeline_times_;
};

}  // namespace

std::unique_ptr<TrainingTask> make_image_classification_task(const plan::TrainConfig& config,
                                                             const plan::RunPlan& run_plan, kernels::Backend backend,
                                                             MemoryTracker& tracker, parallel::ProcessGrid& grid) {
  const std::string& precision = config.precision.dtype;
  if (precision == "bf16") return std::make_unique<ImageClassificationTask<bf16>>(config, run_plan, backend, tracker, grid);
  if (precision == "fp16") return std::make_unique<ImageClassificationTask<fp16>>(config, run_plan, backend, tracker, grid);
  return std::make_unique<ImageClassificationTask<float>>(config, run_plan, backend, tracker, grid);
}

}  // namespace sb::train
