// SPDX-License-Identifier: Apache-2.0
// ResNet on labelled images: per-epoch shuffled batches, gradient accumulation over
// micro-batches, test-set and training-subset evaluation with BatchNorm in eval mode; under
// pipeline parallelism one stage driven by the pipeline executor.
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

// This rank's stage: its units (stem, blocks, head) as the plan assigns them.
resnet::ResnetPartition partition_of(const plan::RunPlan& run_plan, int stage) {
  if (run_plan.pp == 1) return {};
  const plan::StagePlan& mine = run_plan.stage(stage);
  return {mine.unit_begin, mine.unit_end};
}

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
        model_(model_config_, micro_, backend, tracker, partition_of(run_plan, grid.pp_rank()),
               run_plan.stage(grid.pp_rank()).in_flight, nullptr, gradient_residency(c),
               recompute_from_string(c.strategy.recompute), master_residency(c), parameter_residency(c)),
        kernels_(kernels::kernels_for(backend)),
        train_batches_(train_, c.global_batch, c.seed, true),
        images_(static_cast<std::size_t>(c.global_batch * train_.image_size())),
        labels_(static_cast<std::size_t>(c.global_batch)) {
    SB_USER_CHECK(train_.height == model_config_.image_size && train_.channels == model_config_.image_channels,
                  "{}: {} takes {}×{} images with {} channel(s) but {} has {}×{} with {}", c.source,
                  model_config_.name, model_config_.image_size, model_config_.image_size, model_config_.image_channels,
                  train_.name, train_.height, train_.width, train_.channels);
    model_.init_weights(c.seed);
    if (!c.distill.teacher.empty()) load_teacher(c, backend, tracker);
    if (grid.pp() > 1) {
      stage_.emplace(model_, micro_);
      executor_ = std::make_unique<PipelineExecutor>(grid.pp_comm(), *stage_,
                                                     run_plan.schedule, run_plan.micro_batches, tracker);
      stage_activation_.resize(static_cast<std::size_t>(micro_ * model_.input_floats_per_image()));
    }
  }

  std::string model_name() const override { return model_config_.name; }
  std::string dataset_name() const override { return config_.data.dataset; }
  std::int64_t parameter_count() const override { return model_.parameter_count(); }
  std::int64_t seq_len() const override { return 0; }
  std::int64_t tokens_per_step() const override { return 0; }
  std::int64_t steps_per_epoch() const override { return train_.count / config_.global_batch; }
  double flops_per_step() const override { return resnet::resnet_training_flops(model_config_, config_.global_batch); }
  std::vector<optim::ParameterSlice> parameter_slices() override { return model_.parameter_slices(); }
  std::span<float> parameters_flat() override { return model_.parameters_flat(); }
  std::span<float> gradients_flat() override { return model_.gradients_flat(); }
  TrackedBuffer* gradient_pages() override {
    TrackedBuffer& own = model_.gradient_memory();
    return own.residency() == Residency::resident_pages ? &own : nullptr;
  }
  TrackedBuffer* parameter_pages() override {
    TrackedBuffer& own = model_.parameter_memory();
    return own.residency() == Residency::resident_pages ? &own : nullptr;
  }
  void set_unit_parameter_gather(UnitParameterGather* gather) override { model_.set_unit_parameter_gather(gather); }
  TrackedBuffer* master_pages() override {
    TrackedBuffer& master = model_.master_memory();
    return master.data() && master.residency() == Residency::resident_pages ? &master : nullptr;
  }
  std::span<std::byte> sixteen_bit_parameters() override {
    if constexpr (std::is_same_v<S, float>) return {};
    const TrackedBuffer& params = model_.parameter_memory();
    return {params.as<std::byte>(), static_cast<std::size_t>(params.bytes())};
  }
  void narrow_to_storage(std::span<const float> in, std::byte* out) override {
    model_.narrow_to_storage(in, reinterpret_cast<S*>(out));
  }
  std::span<float> untrained_state_flat() override { return model_.running_statistics_flat(); }
  void parameters_updated() override { model_.sync_storage_parameters(); }
  void set_loss_scale(double scale) override { model_.set_loss_scale(scale); }
  void synchronise_batchnorm(std::function<void(std::span<double>)> all_reduce_sum) override {
    model_.set_batchnorm_reducer(std::move(all_reduce_sum));
  }

  // Every rank draws the same shuffled global batch and trains its own images of it.
  double forward_backward(std::int64_t step) override {
    train_batches_.batch(step, images_.data(), labels_.data());
    if (!reduces_every_micro_batch(sync_)) model_.zero_grad();
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

  // The whole test set, and as many training images as eval_batches global batches hold.
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
    stage_->set_batch(images_.data() + first * train_.image_size(), labels_.data() + first,
                      sync_around_backward(model_, accumulation));
    const PipelineStepFigures figures = executor_->run_step();
    pipeline_times_ = {figures.p2p_s, figures.bubble_s(), figures.ops};
    finish_gradients(sync_, kernels_, model_.gradients_flat(), accumulation);
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
      d.count = n;
      d.images.resize(static_cast<std::size_t>(n * d.image_size()));
      d.labels.resize(static_cast<std::size_t>(n));
    }
    return d;
  }

  EvalResult evaluate_split(const std::string& split, const data::ImageDataset& data, std::int64_t count) {
    data::ImageBatcher batches(data, micro_, 0, false);
    EvalResult r{split, 0, 0};
    std::int64_t correct = 0, seen = 0;
    const std::int64_t classes = model_config_.classes;
    for (std::int64_t b = 0; seen < count; ++b) {
      const std::int64_t n = std::min(batches.batch(b, images_.data(), labels_.data()), count - seen);
      seen += n;
      float loss = 0;
      if (model_.has_stem()) {
        loss = model_.forward(0, images_.data(), labels_.data(), n, false);
      } else {
        const std::span<S> received(stage_activation_.data(),
                                    static_cast<std::size_t>(n * model_.input_floats_per_image()));
        receive_from_previous_stage(grid_.pp_comm(), std::as_writable_bytes(received));
        loss = model_.forward_stage(0, received.data(), labels_.data(), n, false);
      }
      if (!model_.has_head()) {
        send_to_next_stage(grid_.pp_comm(), std::as_bytes(std::span(
                                                model_.output(0), static_cast<std::size_t>(n * model_.output_floats_per_image()))));
        continue;
      }
      r.loss += static_cast<double>(loss) * static_cast<double>(n);
      const S* logits = model_.logits();
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
  resnet::ResnetModelT<S> model_;
  const kernels::KernelTable& kernels_;
  data::ImageBatcher train_batches_;
  std::vector<float> images_;
  std::vector<std::int32_t> labels_;
  // distillation only
  std::optional<resnet::ResnetModel> teacher_;
  std::vector<float> teacher_logits_;  // (micro, classes) of the current micro-batch
  std::int64_t teacher_bytes_ = 0;     // its tracked parameters and running statistics, fp32
  // pipeline parallel only
  std::optional<ResnetPipelineStageT<S>> stage_;
  std::unique_ptr<PipelineExecutor> executor_;
  std::vector<S> stage_activation_;  // (micro, in_floats) an evaluation forward's input from the previous stage
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
