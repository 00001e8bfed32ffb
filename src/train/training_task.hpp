// SPDX-License-Identifier: Apache-2.0
// What the training loop needs from a model and its data: one step's forward and backward,
// evaluation, and the figures the results record. Leaves out the optimizer, timing and
// result writing, which the loop (trainer.cpp) owns for every task alike.
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compress/magnitude_pruning.hpp"
#include "compress/post_training_quantization.hpp"
#include "compress/sparse_inference.hpp"
#include "compress/sparse_storage.hpp"
#include "core/finite_scan.hpp"
#include "core/memory.hpp"
#include "core/unit_parameter_gather.hpp"
#include "kernels/kernels.hpp"
#include "models/gpt/gpt_config.hpp"
#include "optim/parameter_slice.hpp"
#include "parallel/process_grid.hpp"
#include "plan/config.hpp"
#include "plan/run_plan.hpp"
#include "train/gradient_sync.hpp"
#include "train/pipeline_executor.hpp"

namespace sb::train {

// This rank's share of every global batch: samples [rank·n/count, (rank+1)·n/count).
struct DataShard {
  std::int64_t rank = 0, count = 1;
};

// Where a step's forward/backward time went besides this rank's compute: a pipeline's
// point-to-point waits and bubble (pipeline_executor.hpp defines both); zero without pipeline.
struct PipelineTimes {
  double p2p_s = 0, bubble_s = 0;
  std::vector<PipelineOpRecord> ops;  // the stage's forwards and backwards, for the trace
};

struct EvalResult {
  std::string split;  // train | heldout | test
  double loss = 0, accuracy = 0;
};

// Whether micro-batch m of `accumulation` reports its gradient ranges to `sync` as backward
// finishes them: the last one, or every one when the sync reduces each micro-batch (ZeRO-2).
bool reports_gradients(const GradientSync* sync, std::int64_t m, std::int64_t accumulation);

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual std::string model_name() const = 0;
  virtual std::string dataset_name() const = 0;
  virtual std::int64_t parameter_count() const = 0;
  virtual std::int64_t seq_len() const = 0;          // 0 when samples are not sequences
  virtual std::int64_t tokens_per_step() const = 0;  // 0 when samples are not sequences
  virtual std::int64_t steps_per_epoch() const = 0;
  virtual double flops_per_step() const = 0;
  // Zeroes the gradients, runs forward and backward over this rank's micro-batches of global
  // step `step` and returns this rank's mean loss. Without a GradientSync it leaves the
  // gradient of that mean loss; with one it reports each gradient range to it as the last
  // micro-batch's backward finishes it, and then calls finish().
  virtual double forward_backward(std::int64_t step) = 0;
  void set_gradient_sync(GradientSync* sync) { sync_ = sync; }
  // BatchNorm statistics summed over every data-parallel rank (models without BatchNorm
  // refuse); `all_reduce_sum` adds a vector of doubles over the ranks in place.
  virtual void synchronise_batchnorm(std::function<void(std::span<double>)> all_reduce_sum);
  // Where parameters_flat(), gradients_flat(), the NamedValues lists below and the optimizer
  // state live: host memory, or the GPU under device cuda. Host code reads them through
  // train/device_staging.hpp.
  virtual Device device() const { return Device::cpu; }
  // fp32: the weights; under mixed precision the fp32 master weights. Backward's gradients are
  // fp32 always (16-bit main gradients are kept by the data-parallel exchange).
  virtual std::span<float> parameters_flat() = 0;
  virtual std::span<float> gradients_flat() = 0;
  // gradients_flat()'s buffer where it is charged by resident pages (ZeRO-2: strategy.zero 2
  // builds the model so), otherwise null.
  virtual TrackedBuffer* gradient_pages() { return nullptr; }
  // ZeRO-3 (strategy.zero 3): parameters_flat()'s buffer, charged by resident pages, and where
  // the model's units get their weights from (train/zero3_unit_gather.hpp); a task that cannot
  // shard its parameters returns null and refuses.
  virtual TrackedBuffer* parameter_pages() { return nullptr; }
  virtual void set_unit_parameter_gather(UnitParameterGather* gather);
  // ZeRO-1, 2 and 3 under mixed precision (the task built with master_residency()): the fp32
  // master weights' buffer (parameters_flat()), charged by resident pages, whose shards the
  // data-parallel ranks hold; the model's 16-bit weights, flat order as parameters_flat(); and
  // the rounding of fp32 values into their type (out: in.size() elements of it). Null, empty
  // and unused in fp32, where the weights are the master.
  virtual TrackedBuffer* master_pages() { return nullptr; }
  virtual std::span<std::byte> sixteen_bit_parameters() { return {}; }
  virtual void narrow_to_storage(std::span<const float> in, std::byte* out);
  // Model state that is not trained but must survive a checkpoint (ResNet's BatchNorm running
  // statistics); empty for models without any.
  virtual std::span<float> untrained_state_flat() { return {}; }
  // Mixed precision: after parameters_flat() changed (optimizer step, broadcast, ZeRO-1
  // all-gather), rounds them into the 16-bit weights forward and backward read; nothing in fp32.
  virtual void parameters_updated() {}
  // fp16 loss scaling: the next backward starts from loss·scale (its gradients carry the
  // factor until the optimizer divides it out). Tasks without 16-bit storage take only 1.
  virtual void set_loss_scale(double scale);
  // Collective over the ranks that hold one model replica (tp×pp of data-parallel rank 0, who
  // alone call it); the results are valid on the replica's first rank (world rank 0).
  virtual std::vector<EvalResult> evaluate() = 0;
  virtual PipelineTimes pipeline_times() const { return {}; }
  virtual std::vector<optim::ParameterSlice> parameter_slices() = 0;
  // After a step whose loss or gradient norm is not finite, where to look for the first
  // non-finite value, each list in forward order (finite_scan.hpp): this rank's fp32
  // activations of its last forward (empty when the task does not list them), and its
  // parameter gradients (by default the optimizer's slices, whole tensors).
  virtual std::vector<NamedValues> forward_values() { return {}; }
  // Post-training int8 quantisation of the trained model (compress.quantize: int8): calibrates
  // on `calibration_batches` micro-batches of training data, then compares fp32 and int8 on the
  // task's evaluation data (ResNet: test accuracy; GPT: held-out loss). One rank with the whole
  // fp32 model (the config reader checks tp, pp, precision and device); no communication.
  virtual compress::QuantizationReport quantize_int8(std::int64_t calibration_batches) = 0;
  virtual std::vector<NamedValues> gradient_values();
  // Sparse inference of the pruned trained model from its stored weights (prune), measured
  // against its dense inference (compress/sparse_inference.hpp); none where the task has no
  // sparse model (GPT, mixed precision, the GPU, a pipeline stage). Rank 0, no communication.
  virtual std::optional<compress::SparseInferenceReport> sparse_inference(const compress::StoredWeights& /*stored*/) {
    return std::nullopt;
  }
  // Tracked parameter bytes of models the run reads but does not produce (a distillation
  // teacher): left out of summary.weight_bytes.
  virtual std::int64_t auxiliary_parameter_bytes() const { return 0; }
  // The GEMM weight matrices that magnitude pruning ranks, pointing into parameters_flat()
  // (ResNet: every convolution and fc; GPT: qkv, attention projection, fc and fc projection of
  // every layer, not the embeddings); empty when the task does not list them.
  virtual std::vector<compress::WeightMatrix> weight_matrices() { return {}; }
  // Whether a parameter slice (by name) belongs to the head, the one part `finetune.freeze:
  // backbone` trains; false everywhere for a task without a separate head.
  virtual bool is_head_parameter(const std::string& /*slice_name*/) const { return false; }
  // The parameters at the end of parameters_flat() that this task adds to its model (a
  // classification head on a language model): a checkpoint of the bare model lacks them, and
  // `finetune.from` such a checkpoint loads everything before them (they keep their
  // initialisation). 0 for a task whose checkpoints and model are one.
  virtual std::int64_t appended_head_parameters() const { return 0; }

 protected:
  // For a pipeline stage's set_batch: during each backward that reports its gradients
  // (reports_gradients: the step's last of `micro_batches`, or every one when the sync reduces
  // each micro-batch) the model's gradient ranges, which start `offset` floats into
  // gradients_flat(), go to the GradientSync, and micro_batch_done() follows each such backward
  // but the last; does nothing without a sync.
  template <class Model>
  std::function<void(std::int64_t micro, bool before)> sync_around_backward(Model& model, std::int64_t micro_batches,
                                                                            std::int64_t offset = 0) {
    return [this, &model, micro_batches, offset](std::int64_t micro, bool before) {
      if (!sync_ || !reports_gradients(sync_, micro, micro_batches)) return;
      if (before) {
        model.set_gradient_ready_callback([this, offset](std::int64_t o, std::int64_t n) { sync_->ready(offset + o, n); });
        return;
      }
      model.set_gradient_ready_callback({});
      if (micro + 1 < micro_batches) sync_->micro_batch_done();
    };
  }

  GradientSync* sync_ = nullptr;
};

// Builds the task a config names (GPT on text: a language model, or with data spam-assassin a
// sequence classifier; ResNet on images), loading and checking its
// data; every user mistake is a UserError before anything is written.
// `run_plan` (plan::resolve_run_plan of the config on the grid's world) gives the micro-batches
// and this rank's pipeline stage; `grid` places this rank: its data shard (dp), its
// tensor-parallel shard (tp) and its pipeline stage (pp); it must outlive the task.
std::unique_ptr<TrainingTask> make_training_task(const plan::TrainConfig& config, const plan::RunPlan& run_plan,
                                                 kernels::Backend backend, MemoryTracker& tracker,
                                                 parallel::ProcessGrid& grid);

std::unique_ptr<TrainingTask> make_language_model_task(const plan::TrainConfig& config, const plan::RunPlan& run_plan,
                                                       kernels::Backend backend, MemoryTracker& tracker,
                                                       parallel::ProcessGrid& grid);
std::unique_ptr<TrainingTask> make_sequence_classification_task(const plan::TrainConfig& config,
                                                                const plan::RunPlan& run_plan,
                                                                kernels::Backend backend, MemoryTracker& tracker,
                                                                parallel::ProcessGrid& grid);
std::unique_ptr<TrainingTask> make_image_classification_task(const plan::TrainConfig& config,
                                                             const plan::RunPlan& run_plan,
                                                             kernels::Backend backend, MemoryTracker& tracker,
                                                             parallel::ProcessGrid& grid);

// After `accumulation` micro-batch backwards, each adding the gradient of its own mean loss:
// divides by `accumulation` to leave the gradient of the global batch's mean loss.
void average_accumulated_gradients(const kernels::KernelTable& kernels, std::span<float> gradients,
                                   std::int64_t accumulation);

// How the model builds its gradient buffer for this run: charged by resident pages under
// ZeRO-2 and 3 (strategy.zero 2, 3), whose reduction gives each reduced range's pages back, and
// with 16-bit main gradients (precision.main_grads storage), which take each range as it is
// reported.
Residency gradient_residency(const plan::TrainConfig& config);
// ... and its parameter buffer: charged by resident pages under ZeRO-3 (strategy.zero 3), where
// it is held only to initialise and while a checkpoint gathers every parameter into it.
Residency parameter_residency(const plan::TrainConfig& config);
// ... and its fp32 master weights' buffer (mixed precision): charged by resident pages under
// ZeRO-1, 2 and 3 (strategy.zero >= 1), where each data-parallel rank keeps only its shard of
// them (ZeRO's K = 12 bytes per parameter sharded whole: master weights and moments).
Residency master_residency(const plan::TrainConfig& config);

// Whether `sync` leaves the gradients zero after reducing them, so the task does not zero them.
bool reduces_every_micro_batch(const GradientSync* sync);

// The end of a task's backward: hands the gradients to `sync` (which averages over ranks) or
// averages the accumulated micro-batch gradients itself.
void finish_gradients(GradientSync* sync, const kernels::KernelTable& kernels, std::span<float> gradients,
                      std::int64_t accumulation);

}  // namespace sb::train
