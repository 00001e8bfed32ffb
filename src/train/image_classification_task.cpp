// ResNet on labelled images: per-epoch shuffled batches, gradient accumulation over
// micro-batches, test-set and training-subset evaluation with BatchNorm in eval mode.
#include <algorithm>

#include "core/check.hpp"
#include "data/image_dataset.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

class ImageClassificationTask final : public TrainingTask {
 public:
  ImageClassificationTask(const TrainConfig& c, kernels::Backend backend, MemoryTracker& tracker,
                          DataShard shard)
      : config_(c),
        shard_(shard),
        model_config_(resnet::resnet_config_by_name(c.model.name)),
        micro_(micro_batch_of(c)),
        train_(load(c, "train")),
        test_(load(c, "test")),
        model_(model_config_, micro_, backend, tracker),
        kernels_(kernels::kernels_for(backend)),
        train_batches_(train_, c.global_batch, c.seed, true),
        images_(static_cast<std::size_t>(c.global_batch * train_.image_size())),
        labels_(static_cast<std::size_t>(c.global_batch)) {
    SB_USER_CHECK(train_.height == model_config_.image_size && train_.channels == model_config_.image_channels,
                  "{}: {} takes {}×{} images with {} channel(s) but {} has {}×{} with {}", c.source,
                  model_config_.name, model_config_.image_size, model_config_.image_size, model_config_.image_channels,
                  train_.name, train_.height, train_.width, train_.channels);
    model_.init_weights(c.seed);
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
  void synchronise_batchnorm(std::function<void(std::span<double>)> all_reduce_sum) override {
    model_.set_batchnorm_reducer(std::move(all_reduce_sum));
  }

  // Every rank draws the same shuffled global batch and trains its own images of it.
  double forward_backward(std::int64_t step) override {
    train_batches_.batch(step, images_.data(), labels_.data());
    model_.zero_grad();
    const std::int64_t local = local_batch_of(config_);
    const std::int64_t accumulation = local / micro_;
    const std::int64_t image_size = train_.image_size();
    double loss = 0;
    for (std::int64_t m = 0; m < accumulation; ++m) {
      const std::int64_t first = shard_.rank * local + m * micro_;
      loss += model_.forward(images_.data() + first * image_size, labels_.data() + first, micro_, true);
      if (sync_ && m + 1 == accumulation)
        model_.set_gradient_ready_callback([this](std::int64_t o, std::int64_t n) { sync_->ready(o, n); });
      model_.backward();
      model_.set_gradient_ready_callback({});
    }
    finish_gradients(sync_, kernels_, model_.gradients_flat(), accumulation);
    return loss / static_cast<double>(accumulation);
  }

  // The whole test set, and as many training images as eval_batches global batches hold.
  std::vector<EvalResult> evaluate() override {
    return {evaluate_split("test", test_, test_.count),
            evaluate_split("train", train_, std::min(train_.count, config_.eval_batches * config_.global_batch))};
  }

 private:
  static data::ImageDataset load(const TrainConfig& c, const std::string& split) {
    SB_USER_CHECK(c.optimizer.type == "sgd" || c.optimizer.type == "adamw",
                  "{}: unknown optimizer.type '{}'", c.source, c.optimizer.type);
    if (c.data.dataset == "mnist") return data::load_mnist(c.data.path, split);
    if (c.data.dataset == "fashion-mnist") return data::load_fashion_mnist(c.data.path, split);
    throw UserError(fmt::format("{}: model {} trains on images (data: mnist or fashion-mnist), not '{}'", c.source,
                                c.model.name, c.data.dataset));
  }

  EvalResult evaluate_split(const std::string& split, const data::ImageDataset& data, std::int64_t count) {
    data::ImageBatcher batches(data, micro_, 0, false);
    EvalResult r{split, 0, 0};
    std::int64_t correct = 0, seen = 0;
    const std::int64_t classes = model_config_.classes;
    for (std::int64_t b = 0; seen < count; ++b) {
      const std::int64_t n = std::min(batches.batch(b, images_.data(), labels_.data()), count - seen);
      r.loss += static_cast<double>(model_.forward(images_.data(), labels_.data(), n, false)) * static_cast<double>(n);
      const float* logits = model_.logits();
      for (std::int64_t i = 0; i < n; ++i) {
        const float* row = logits + i * classes;
        correct += std::max_element(row, row + classes) - row == labels_[static_cast<std::size_t>(i)];
      }
      seen += n;
    }
    r.loss /= static_cast<double>(seen);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(seen);
    return r;
  }

  TrainConfig config_;
  DataShard shard_;
  resnet::ResnetConfig model_config_;
  std::int64_t micro_;
  data::ImageDataset train_, test_;
  resnet::ResnetModel model_;
  const kernels::KernelTable& kernels_;
  data::ImageBatcher train_batches_;
  std::vector<float> images_;
  std::vector<std::int32_t> labels_;
};

}  // namespace

std::unique_ptr<TrainingTask> make_image_classification_task(const TrainConfig& config, kernels::Backend backend,
                                                             MemoryTracker& tracker, DataShard shard) {
  return std::make_unique<ImageClassificationTask>(config, backend, tracker, shard);
}

}  // namespace sb::train
