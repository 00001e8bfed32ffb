// The GPT reference on a byte-level corpus: seeded training windows, gradient accumulation
// over micro-batches, held-out and training-split evaluation in nats per byte.
#include <algorithm>

#include "core/check.hpp"
#include "data/text_corpus.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

class LanguageModelTask final : public TrainingTask {
 public:
  LanguageModelTask(const TrainConfig& c, kernels::Backend backend, MemoryTracker& tracker, DataShard shard)
      : config_(c),
        shard_(shard),
        model_config_(gpt_config_of(c)),
        T_(c.seq_len > 0 ? c.seq_len : model_config_.max_seq_len),
        micro_(micro_batch_of(c)),
        corpus_(load_corpus(c, model_config_, T_)),
        model_(model_config_, micro_, T_, backend, tracker),
        kernels_(kernels::kernels_for(backend)),
        train_windows_(corpus_.train(), c.global_batch, T_, c.seed),
        heldout_eval_(corpus_.heldout(), micro_, T_, 0),
        train_eval_(corpus_.train(), micro_, T_, 0),
        tokens_(static_cast<std::size_t>(c.global_batch * T_)),
        targets_(tokens_.size()) {
    model_.init_weights(c.seed);
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
  std::vector<optim::ParameterSlice> parameter_slices() override { return model_.parameter_slices(); }
  std::span<float> parameters_flat() override { return model_.parameters_flat(); }
  std::span<float> gradients_flat() override { return model_.gradients_flat(); }

  // Every rank draws the same global batch of windows and trains its own rows of it.
  double forward_backward(std::int64_t step) override {
    train_windows_.training_batch(step, tokens_.data(), targets_.data());
    model_.zero_grad();
    const std::int64_t local = local_batch_of(config_);
    const std::int64_t accumulation = local / micro_;
    double loss = 0;
    for (std::int64_t m = 0; m < accumulation; ++m) {
      const auto offset = static_cast<std::size_t>((shard_.rank * local + m * micro_) * T_);
      loss += model_.forward(tokens_.data() + offset, targets_.data() + offset, micro_, T_);
      if (sync_ && m + 1 == accumulation)
        model_.set_gradient_ready_callback([this](std::int64_t o, std::int64_t n) { sync_->ready(o, n); });
      model_.backward();
      model_.set_gradient_ready_callback({});
    }
    finish_gradients(sync_, kernels_, model_.gradients_flat(), accumulation);
    return loss / static_cast<double>(accumulation);
  }

  std::vector<EvalResult> evaluate() override {
    return {evaluate_split("heldout", heldout_eval_), evaluate_split("train", train_eval_)};
  }

 private:
  static data::TextCorpus load_corpus(const TrainConfig& c, const gpt::GptConfig& model, std::int64_t T) {
    SB_USER_CHECK(c.data.dataset == "sotu", "{}: model {} trains on text (data: sotu), not '{}'", c.source,
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
    const std::int64_t V = model_config_.vocab, batches = config_.eval_batches * config_.global_batch / micro_;
    for (std::int64_t i = 0; i < batches; ++i) {
      sampler.evaluation_batch(i, batches, tokens_.data(), targets_.data());
      r.loss += model_.forward(tokens_.data(), targets_.data(), micro_, T_);
      const float* logits = model_.logits();
      for (std::int64_t bt = 0; bt < micro_ * T_; ++bt) {
        const float* row = logits + bt * V;
        correct += std::max_element(row, row + V) - row == targets_[static_cast<std::size_t>(bt)];
      }
    }
    r.loss /= static_cast<double>(batches);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(batches * micro_ * T_);
    return r;
  }

  TrainConfig config_;
  DataShard shard_;
  gpt::GptConfig model_config_;
  std::int64_t T_, micro_;
  data::TextCorpus corpus_;
  gpt::GptModel model_;
  const kernels::KernelTable& kernels_;
  data::WindowSampler train_windows_, heldout_eval_, train_eval_;
  std::vector<std::int32_t> tokens_, targets_;
};

}  // namespace

std::unique_ptr<TrainingTask> make_language_model_task(const TrainConfig& config, kernels::Backend backend,
                                                       MemoryTracker& tracker, DataShard shard) {
  return std::make_unique<LanguageModelTask>(config, backend, tracker, shard);
}

}  // namespace sb::train
