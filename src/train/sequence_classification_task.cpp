// SPDX-License-Identifier: Apache-2.0
// The GPT as a sequence classifier on labelled text (SpamAssassin: spam or ham): the byte-level
// GPT's final hidden states, mean-pooled over each message's real bytes, into a linear head
// (models/gpt/sequence_classifier_head.hpp); per-epoch shuffled batches of the training
// messages (or the data.train_samples subset), gradient accumulation over micro-batches, and
// accuracy on the held-out test set (or its first data.test_samples). The parameters are the
// GPT's own, in its order, followed by the head's, so `finetune.from` a language-model checkpoint
// of the same GPT loads the backbone (parameter_constraints.cpp) and the head starts fresh.
// Leaves out tensor and pipeline parallelism, mixed precision and the compression options (each
// refused by name).
#include <algorithm>
#include <memory>
#include <numeric>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "data/spam_corpus.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/gpt/sequence_classifier_head.hpp"
#include "train/training_task.hpp"

namespace sb::train {

namespace {

constexpr std::int64_t kSpamClasses = 2;  // 0 ham, 1 spam
constexpr std::uint64_t kShuffleStream = 0x5BA4'0002;

// The head's initialisation stream continues the GPT's tensor numbering (wte 0 .. lnfb 15).
constexpr std::uint64_t kHeadInitStream = gpt::kParameterTensorCount;

// Every mistake this task cannot train, before any data is read.
void check_classification_config(const plan::TrainConfig& c, const gpt::GptConfig& model, std::int64_t T) {
  SB_USER_CHECK(c.precision.dtype == "fp32", "{}: {} classifies spam-assassin in precision fp32 only, not {}",
                c.source, model.name, c.precision.dtype);
  SB_USER_CHECK(c.strategy.tp == 1 && c.strategy.pp == 1,
                "{}: {} classifies spam-assassin on data-parallel ranks only (strategy tp 1 and pp 1, given tp {} "
                "and pp {})",
                c.source, model.name, c.strategy.tp, c.strategy.pp);
  SB_USER_CHECK(c.compress.quantize == "none" && c.prune.pattern.empty() && c.distill.teacher.empty(),
                "{}: compress, prune and distill are not available for the spam-assassin classifier; remove them",
                c.source);
  SB_USER_CHECK(c.optimizer.type == "adamw" || c.optimizer.type == "sgd", "{}: unknown optimizer.type '{}'",
                c.source, c.optimizer.type);
  SB_USER_CHECK(model.vocab >= 256, "{}: byte-level text needs model.vocab >= 256, got {}", c.source, model.vocab);
  SB_USER_CHECK(T <= model.max_seq_len, "{}: seq_len {} exceeds the model's maximum sequence length {}", c.source,
                T, model.max_seq_len);
}

// The whole model on one rank, recomputing what strategy.recompute names.
gpt::GptPartition recomputing(const plan::TrainConfig& c) {
  gpt::GptPartition p;
  p.recompute = recompute_from_string(c.strategy.recompute);
  return p;
}

data::SpamCorpus load_checked(const plan::TrainConfig& c, const gpt::GptConfig& model, std::int64_t T) {
  check_classification_config(c, model, T);
  data::SpamCorpus corpus = data::load_spam_assassin(c.data.path, T, c.data.train_samples);
  SB_USER_CHECK(corpus.train.count >= c.global_batch,
                "{}: data.train_samples {} must be at least batch.global ({})", c.source, corpus.train.count,
                c.global_batch);
  const std::int64_t t = c.data.test_samples;
  if (t > 0) {  // evaluated on the first t test messages
    SB_USER_CHECK(t <= corpus.test.count, "{}: data.test_samples {} exceeds the {} test messages of spam-assassin",
                  c.source, t, corpus.test.count);
    corpus.test.count = t;
    corpus.test.tokens.resize(static_cast<std::size_t>(t * T));
    corpus.test.lengths.resize(static_cast<std::size_t>(t));
    corpus.test.labels.resize(static_cast<std::size_t>(t));
  }
  return corpus;
}

class SequenceClassificationTask final : public TrainingTask {
 public:
  SequenceClassificationTask(const plan::TrainConfig& c, const plan::RunPlan& run_plan, kernels::Backend backend,
                             MemoryTracker& tracker, parallel::ProcessGrid& grid)
      : config_(c),
        plan_(run_plan),
        shard_{grid.dp_rank(), grid.dp()},
        model_config_(plan::gpt_config_of(c)),
        T_(c.seq_len > 0 ? c.seq_len : model_config_.max_seq_len),
        micro_(run_plan.micro_batch),
        corpus_(load_checked(c, model_config_, T_)),
        head_shape_{model_config_.channels, kSpamClasses},
        model_(model_config_, micro_, T_, backend, tracker, recomputing(c), head_shape_.parameter_count()),
        head_(head_shape_, micro_),
        kernels_(kernels::kernels_for(backend)),
        order_(static_cast<std::size_t>(corpus_.train.count)),
        dhidden_(static_cast<std::size_t>(micro_ * T_ * model_config_.channels)) {
    SB_USER_CHECK(model_.device() == Device::cpu, "{}: the spam-assassin classifier runs on device cpu", c.source);
    model_.init_weights(c.seed);
    classifier_head_init(model_.appended_parameters_flat().data(), head_shape_, c.seed, kHeadInitStream);
  }

  std::string model_name() const override { return model_config_.name; }
  std::string dataset_name() const override { return config_.data.dataset; }
  std::int64_t parameter_count() const override {
    return gpt::gpt_parameter_count(model_config_) + head_shape_.parameter_count();
  }
  std::int64_t seq_len() const override { return T_; }
  std::int64_t tokens_per_step() const override { return config_.global_batch * T_; }
  std::int64_t steps_per_epoch() const override { return corpus_.train.count / config_.global_batch; }
  // the blocks and the head's pooling and linear; no tied output layer over the vocabulary
  double flops_per_step() const override {
    const std::int64_t B = config_.global_batch;
    return 3.0 * (static_cast<double>(model_config_.layers) * gpt::gpt_block_forward_flops(model_config_, B, T_) +
                  2.0 * static_cast<double>(B * head_shape_.parameter_count()));
  }
  std::span<float> parameters_flat() override { return model_.parameters_flat(); }
  std::span<float> gradients_flat() override { return model_.gradients_flat(); }
  std::vector<optim::ParameterSlice> parameter_slices() override {
    std::vector<optim::ParameterSlice> slices = model_.parameter_slices();
    const gpt::ClassifierHeadTensors p = params(), g = grads();
    slices.push_back({"head.weight", p.weight, g.weight, head_shape_.classes * head_shape_.channels, true, false});
    slices.push_back({"head.bias", p.bias, g.bias, head_shape_.classes, false, false});
    return slices;
  }
  bool is_head_parameter(const std::string& name) const override { return name.rfind("head.", 0) == 0; }
  std::int64_t appended_head_parameters() const override { return head_shape_.parameter_count(); }

  // Every rank draws the same shuffled global batch and trains its own messages of it.
  double forward_backward(std::int64_t step) override {
    const std::int64_t batch_rows = config_.global_batch;
    const std::int64_t per_epoch = steps_per_epoch();
    prepare_epoch(step / per_epoch);
    model_.zero_grad();
    const std::int64_t local = plan_.local_batch;
    const std::int64_t accumulation = local / micro_;
    const std::int64_t first_row = (step % per_epoch) * batch_rows + shard_.rank * local;
    double loss = 0;
    for (std::int64_t m = 0; m < accumulation; ++m) {
      gather(corpus_.train, order_.data() + first_row + m * micro_, micro_);
      const float* hidden = model_.forward_hidden(tokens_.data(), micro_, T_);
      loss += head_.forward(hidden, lengths_.data(), labels_.data(), micro_, T_, params());
      head_.backward(dhidden_.data(), grads(), params());
      const bool last = m + 1 == accumulation;
      if (sync_ && last) {
        const std::span<float> head = model_.appended_gradients_flat();
        sync_->ready(head.data() - model_.gradients_flat().data(), static_cast<std::int64_t>(head.size()));
        model_.set_gradient_ready_callback([this](std::int64_t o, std::int64_t n) { sync_->ready(o, n); });
      }
      model_.backward_hidden(dhidden_.data());
      model_.set_gradient_ready_callback({});
    }
    finish_gradients(sync_, kernels_, model_.gradients_flat(), accumulation);
    return loss / static_cast<double>(accumulation);
  }

  // The held-out test set (its first data.test_samples where given), and as many training messages
  // as eval_batches global batches hold.
  std::vector<EvalResult> evaluate() override {
    return {evaluate_split("test", corpus_.test, corpus_.test.count),
            evaluate_split("train", corpus_.train,
                           std::min(corpus_.train.count, config_.eval_batches * config_.global_batch))};
  }

  compress::QuantizationReport quantize_int8(std::int64_t) override {
    throw UserError(fmt::format("{}: 'compress.quantize: int8' is not available for the spam-assassin classifier",
                                config_.source));
  }

 private:
  gpt::ClassifierHeadTensors params() { return gpt::classifier_head_views(model_.appended_parameters_flat().data(), head_shape_); }
  gpt::ClassifierHeadTensors grads() { return gpt::classifier_head_views(model_.appended_gradients_flat().data(), head_shape_); }

  // The training messages in the order of `epoch`: a permutation keyed by (seed, epoch).
  void prepare_epoch(std::int64_t epoch) {
    if (epoch == epoch_) return;
    epoch_ = epoch;
    std::iota(order_.begin(), order_.end(), 0);
    CounterRng(config_.seed ^ (static_cast<std::uint64_t>(epoch) << 32), kShuffleStream).shuffle(order_.data(), order_.size());
  }

  // Messages rows[0..n) of `data` into tokens_ (n, T), lengths_ and labels_ (n).
  void gather(const data::EncodedMessages& data, const std::int64_t* rows, std::int64_t n) {
    tokens_.resize(static_cast<std::size_t>(n * T_));
    lengths_.resize(static_cast<std::size_t>(n));
    labels_.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t r = rows[i];
      std::copy_n(data.tokens.begin() + r * T_, T_, tokens_.begin() + i * T_);
      lengths_[static_cast<std::size_t>(i)] = data.lengths[static_cast<std::size_t>(r)];
      labels_[static_cast<std::size_t>(i)] = data.labels[static_cast<std::size_t>(r)];
    }
  }

  // Mean loss and accuracy over the first `count` messages of `data`, a micro-batch at a time.
  EvalResult evaluate_split(const std::string& split, const data::EncodedMessages& data, std::int64_t count) {
    EvalResult r{split, 0, 0};
    std::int64_t correct = 0;
    std::vector<std::int64_t> rows(static_cast<std::size_t>(micro_));
    for (std::int64_t first = 0; first < count; first += micro_) {
      const std::int64_t n = std::min(micro_, count - first);
      std::iota(rows.begin(), rows.begin() + n, first);
      gather(data, rows.data(), n);
      const float* hidden = model_.forward_hidden(tokens_.data(), n, T_);
      r.loss += static_cast<double>(head_.forward(hidden, lengths_.data(), labels_.data(), n, T_, params())) *
                static_cast<double>(n);
      for (std::int64_t i = 0; i < n; ++i) correct += head_.predicted(i) == labels_[static_cast<std::size_t>(i)];
    }
    r.loss /= static_cast<double>(count);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(count);
    return r;
  }

  plan::TrainConfig config_;
  plan::RunPlan plan_;
  DataShard shard_;
  gpt::GptConfig model_config_;
  std::int64_t T_, micro_;
  data::SpamCorpus corpus_;
  gpt::ClassifierHeadShape head_shape_;
  gpt::GptModel model_;  // the GPT's parameters, then the head's (appended)
  gpt::SequenceClassifierHead head_;
  const kernels::KernelTable& kernels_;
  std::int64_t epoch_ = -1;
  std::vector<std::int64_t> order_;  // (train count) this epoch's order of the training messages
  std::vector<std::int32_t> tokens_, lengths_, labels_;  // (micro, T), (micro), (micro)
  std::vector<float> dhidden_;                           // (micro, T, C)
};

}  // namespace

std::unique_ptr<TrainingTask> make_sequence_classification_task(const plan::TrainConfig& config,
                                                                const plan::RunPlan& run_plan,
                                                                kernels::Backend backend, MemoryTracker& tracker,
                                                                parallel::ProcessGrid& grid) {
  return std::make_unique<SequenceClassificationTask>(config, run_plan, backend, tracker, grid);
}

}  // namespace sb::train
