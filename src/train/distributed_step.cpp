// SPDX-License-Identifier: Apache-2.0
// A data-parallel training step: exchange set-up once, then forward/backward, exchange, loss,
// optimizer and (ZeRO-1) parameter all-gather each step.
#include "train/distributed_step.hpp"

#include "train/parameter_constraints.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"
#include "plan/run_plan.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "runtime/device_runtime.hpp"
#include "train/device_staging.hpp"
#include "train/failure_injection.hpp"
#include "train/lr_schedule.hpp"
#include "train/slowed_gradient_sync.hpp"
#include "train/storage_main_gradients.hpp"
#include "train/zero3_unit_gather.hpp"

namespace sb::train {

namespace {

using parallel::comm_clock_seconds;

// AdamW or SGD behind one call: clip the gradients, step with this learning rate, return
// the gradient norm before clipping. With ZeRO-1 the slices are this rank's shard and
// `reduce_norm` makes the clipping norm the whole model's.
std::function<double(double, const optim::GradientScaling&)> make_optimizer_step(const plan::TrainConfig& c, std::vector<optim::ParameterSlice> slices,
                                                  kernels::Backend backend, MemoryTracker& tracker,
                                                  optim::SquaredNormReducer reduce_norm, OptimizerState& state) {
  for (const optim::ParameterSlice& s : slices) state.count += s.numel;
  const auto& o = c.optimizer;
  if (o.type == "sgd") {
    optim::SgdConfig config;
    config.lr = o.lr;
    config.momentum = o.momentum;
    config.weight_decay = o.weight_decay;
    config.grad_clip = o.grad_clip;
    auto sgd = std::make_shared<optim::Sgd>(std::move(slices), config, backend, tracker);
    sgd->set_norm_reducer(std::move(reduce_norm));
    state.optimizer = "sgd";
    state.tensors = {{"momentum", sgd->momentum_buffers()}};
    state.step_count = [sgd] { return sgd->step_count(); };
    state.set_step_count = [sgd](std::int64_t step) { sgd->set_step_count(step); };
    return [sgd](double lr, const optim::GradientScaling& scaling) { return sgd->clip_and_step(lr, scaling); };
  }
  optim::AdamWConfig config;
  config.lr = o.lr;
  config.beta1 = o.beta1;
  config.beta2 = o.beta2;
  config.eps = o.eps;
  config.weight_decay = o.weight_decay;
  config.grad_clip = o.grad_clip;
  auto adamw = std::make_shared<optim::AdamW>(std::move(slices), config, backend, tracker);
  adamw->set_norm_reducer(std::move(reduce_norm));
  state.optimizer = "adamw";
  state.tensors = {{"m", adamw->first_moments()}, {"v", adamw->second_moments()}};
  state.step_count = [adamw] { return adamw->step_count(); };
  state.set_step_count = [adamw](std::int64_t step) { adamw->set_step_count(step); };
  return [adamw](double lr, const optim::GradientScaling& scaling) { return adamw->clip_and_step(lr, scaling); };
}

// fp16 scales its loss unless precision.loss_scale is none; bf16 and fp32 never do.
std::optional<optim::LossScaler> loss_scaler_of(const plan::PrecisionSpec& p) {
  if (p.dtype != "fp16" || p.loss_scale == "none") return std::nullopt;
  optim::LossScalerConfig config;
  config.growth_interval = p.growth_interval;
  if (p.loss_scale != "dynamic") {
    config.initial_scale = p.static_loss_scale;
    config.dynamic = false;
  }
  return optim::LossScaler(config);
}

}  // namespace

DistributedStep::DistributedStep(const plan::TrainConfig& config, TrainingTask& task, parallel::ProcessGrid& grid,
                                 kernels::Backend backend, MemoryTracker& tracker)
    : config_(config),
      task_(task),
      device_(kernels::memory_device(backend)),
      dp_(grid.dp_comm()),
      tp_(grid.tp_comm()),
      scaler_(loss_scaler_of(config.precision)),
      inject_overflow_step_(overflow_step_to_inject(grid.world_rank())),
      world_rank_(grid.world_rank()) {
  parallel::Communicator& dp = dp_;
  parallel::Communicator& mp = grid.mp_comm();
  SB_CHECK(dp.size() == config.strategy.dp, "data-parallel group of {} ranks for strategy.dp {}", dp.size(),
           config.strategy.dp);
  const std::span<float> parameters = task.parameters_flat();
  dp.broadcast(parameters.data(), static_cast<std::int64_t>(parameters.size()), parallel::DataType::f32, 0);
  task.parameters_updated();
  std::vector<optim::ParameterSlice> slices = task.parameter_slices();
  optim::SquaredNormReducer reduce_norm;
  if (mp.size() > 1) reduce_norm = [&mp](double squared) { return mp.all_reduce_value(squared); };
  if (config.strategy.zero >= 1) {
    const auto bucket_bytes = static_cast<std::int64_t>(config.strategy.bucket_mb * 1024 * 1024);
    const bool mixed = config.precision.dtype != "fp32";
    // ZeRO-2 and 3 with 16-bit main gradients: their buckets and gradient shard in that type
    const bool sixteen_bit_shards = config.precision.sixteen_bit_main_gradients() && config.strategy.zero >= 2;
    const parallel::DataType gradient_type = !sixteen_bit_shards                ? parallel::DataType::f32
                                             : config.precision.dtype == "bf16" ? parallel::DataType::bf16
                                                                                : parallel::DataType::f16;
    zero_ = std::make_unique<ZeroSharding>(static_cast<int>(config.strategy.zero), dp, parameters,
                                           task.gradients_flat(), task.gradient_pages(), bucket_bytes, tracker,
                                           mixed ? MemoryCategory::optimizer : MemoryCategory::params,
                                           sixteen_bit_weights_to_gather(task), gradient_type);
    if (zero_->holds_parameter_shard() && config.strategy.zero <= 2) shard_master_weights(task, tracker);
    slices = zero_->shard_slices(slices);
    if (config.precision.sixteen_bit_main_gradients() && !sixteen_bit_shards) {  // ZeRO-1: the 16-bit sums reduce-scattered
      keep_sixteen_bit_main_gradients(task, tracker, StorageMainGradients::Reduction::scatter);
      slices = storage_->main_gradient_slices(slices);
    } else {
      task.set_gradient_sync(zero_.get());
    }
    if (config.strategy.zero == 3) shard_parameters(task, tracker);
    reduce_norm = [&dp, &mp](double squared) {
      squared = dp.all_reduce_value(squared);
      return mp.size() > 1 ? mp.all_reduce_value(squared) : squared;
    };
  } else if (config.precision.sixteen_bit_main_gradients()) {
    keep_sixteen_bit_main_gradients(task, tracker, StorageMainGradients::Reduction::all_reduce);
    slices = storage_->main_gradient_slices(slices);
  } else if (dp.size() > 1) {
    const auto bucket_bytes = static_cast<std::int64_t>(config.strategy.bucket_mb * 1024 * 1024);
    all_reduce_ = std::make_unique<BucketedAllReduce>(dp, task.gradients_flat(), bucket_bytes,
                                                      config.strategy.overlap, config.strategy.allreduce, tracker,
                                                      backend);
    task.set_gradient_sync(all_reduce_.get());
  }
  if (config.strategy.batchnorm == "sync" && dp.size() > 1)
    task.synchronise_batchnorm([&dp](std::span<double> values) { dp.all_reduce(values); });
  slow_the_exchange_if_asked(task);
  optimizer_state_.begin = zero_ ? std::min<std::int64_t>(zero_->shard_begin(), static_cast<std::int64_t>(parameters.size())) : 0;
  optimizer_step_ =
      make_optimizer_step(config, std::move(slices), backend, tracker, std::move(reduce_norm), optimizer_state_);
}

// precision.main_grads storage: every rank keeps its main gradients in 16 bits, also alone
// (they are accumulated over the micro-batches in 16 bits too).
void DistributedStep::keep_sixteen_bit_main_gradients(TrainingTask& task, MemoryTracker& tracker,
                                                      StorageMainGradients::Reduction reduction) {
  const plan::TrainConfig& c = config_;
  const parallel::DataType storage = c.precision.dtype == "bf16" ? parallel::DataType::bf16 : parallel::DataType::f16;
  storage_ = std::make_unique<StorageMainGradients>(
      dp_, task.gradients_flat(), task.gradient_pages(), storage, plan::runnable_plan(c).micro_batches,
      static_cast<std::int64_t>(c.strategy.bucket_mb * 1024 * 1024), c.strategy.overlap, c.strategy.allreduce,
      tracker, reduction);
  task.set_gradient_sync(storage_.get());
}

// ZeRO-1 and 2 under mixed precision: the 16-bit weights the sharding gathers the rounded master
// shards into; nothing in fp32, where the weights are the master.
std::optional<SixteenBitWeights> DistributedStep::sixteen_bit_weights_to_gather(TrainingTask& task) const {
  if (config_.strategy.zero > 2 || config_.precision.dtype == "fp32") return std::nullopt;
  SB_CHECK(task.master_pages() != nullptr && !task.sixteen_bit_parameters().empty(),
           "zero-{} in {}: the model's fp32 master weights are not charged by resident pages",
           config_.strategy.zero, config_.precision.dtype);
  return SixteenBitWeights{task.sixteen_bit_parameters(),
                           [&task](std::span<const float> in, std::byte* out) { task.narrow_to_storage(in, out); }};
}

// ZeRO-1 and 2 under mixed precision: the sharding holds this rank's master shard from here on;
// the whole master's pages are given back, gathered again only for a reader of every master
// weight (a checkpoint's write).
void DistributedStep::shard_master_weights(TrainingTask& task, MemoryTracker& tracker) {
  master_gather_ = std::make_unique<Zero3UnitGather>(dp_, *task.master_pages(),
                                                     std::as_bytes(zero_->parameter_shard()), zero_->shard_size(),
                                                     4, tracker);
}

// ZeRO-3: from here on the model reads each unit from the gathers' buffers; the shard the
// ZeroSharding copied is the parameters' one home.
// Under mixed precision the units gather a 16-bit shard, rounded from the fp32 one after every
// update; checkpoints gather the fp32 master weights.
void DistributedStep::shard_parameters(TrainingTask& task, MemoryTracker& tracker) {
  TrackedBuffer* pages = task.parameter_pages();
  SB_USER_CHECK(pages != nullptr, "{}: strategy.zero 3 shards the parameters of the GPT language model and the "
                "ResNets without pipeline stages; model {} keeps its parameters whole (use zero 0, 1 or 2)",
                config_.source, task.model_name());
  const auto parameters = static_cast<std::int64_t>(task.parameters_flat().size());
  const std::int64_t element_bytes = pages->bytes() / std::max<std::int64_t>(1, parameters);
  const std::span<const std::byte> fp32_shard = std::as_bytes(zero_->parameter_shard());
  if (element_bytes == static_cast<std::int64_t>(sizeof(float))) {
    unit_gather_ =
        std::make_unique<Zero3UnitGather>(dp_, *pages, fp32_shard, zero_->shard_size(), element_bytes, tracker);
  } else {
    TrackedBuffer* master = task.master_pages();
    SB_CHECK(master != nullptr, "zero-3 with {}-byte weights needs the fp32 master weights' pages", element_bytes);
    storage_shard_ = TrackedBuffer(tracker, MemoryCategory::params, zero_->shard_size() * element_bytes,
                                   "zero-3 16-bit parameter shard");
    round_storage_shard();
    unit_gather_ = std::make_unique<Zero3UnitGather>(
        dp_, *pages,
        std::span<const std::byte>(storage_shard_.as<std::byte>(), zero_->parameter_shard().size() * element_bytes),
        zero_->shard_size(), element_bytes, tracker);
    master_gather_ = std::make_unique<Zero3UnitGather>(dp_, *master, fp32_shard, zero_->shard_size(), 4, tracker);
  }
  task.set_unit_parameter_gather(unit_gather_.get());
}

void DistributedStep::round_storage_shard() {
  if (storage_shard_.data()) task_.narrow_to_storage(zero_->parameter_shard(), storage_shard_.as<std::byte>());
}

Zero3UnitGather* DistributedStep::master_gather() const {
  return master_gather_ ? master_gather_.get() : unit_gather_.get();
}

void DistributedStep::gather_all_parameters() {
  if (Zero3UnitGather* master = master_gather()) master->gather_everything();
}

void DistributedStep::release_all_parameters() {
  if (Zero3UnitGather* master = master_gather()) master->release_everything();
}

void DistributedStep::parameters_loaded() {
  if (!zero_ || !zero_->holds_parameter_shard()) return;
  zero_->load_parameter_shard();
  if (!unit_gather_) {  // ZeRO-1 and 2 under mixed precision: the 16-bit weights were rounded whole
    master_gather_->release_everything();
    return;
  }
  round_storage_shard();
  unit_gather_->release_everything();
  if (master_gather_) master_gather_->release_everything();
}

// A rank named by SB_INJECT_FAILURE=R:S:slowP hands its gradients to the exchange through the
// slowed sync, which adds the work at the end of its backward.
void DistributedStep::slow_the_exchange_if_asked(TrainingTask& task) {
  if (slowdown_to_inject(world_rank_, std::numeric_limits<std::int64_t>::max()) <= 0 ||
      (!all_reduce_ && !zero_ && !storage_))
    return;
  slowed_sync_ = storage_ ? std::make_unique<SlowedGradientSync>(*storage_, storage_->last_step())
                 : zero_  ? std::make_unique<SlowedGradientSync>(*zero_, zero_->last_step())
                          : std::make_unique<SlowedGradientSync>(*all_reduce_, all_reduce_->last_step());
  task.set_gradient_sync(slowed_sync_.get());
}

// Before a timestamp: the host threads' work and the GPU's queued work are done.
void DistributedStep::finish_queued_work() const {
  Kokkos::fence();
  synchronize_device(device_);
}

StepResult DistributedStep::run(std::int64_t step, std::int64_t total_steps) {
  StepResult r;
  r.start_s = comm_clock_seconds();
  r.cpu_start_s = process_cpu_seconds();
  // A straggler on demand (SB_INJECT_FAILURE=R:S:slow): this rank works that much longer, in
  // CPU time, as a slower device would (a sleep would be no work: the scheduler's share, not the
  // rank, would then set how much longer it takes). With a data-parallel exchange it works at the
  // end of its backward (slowed_gradient_sync.hpp); without one, here, a share of its last step's
  // compute.
  const double slowdown = slowdown_to_inject(world_rank_, step + 1);
  if (slowed_sync_) slowed_sync_->arm(slowdown, r.cpu_start_s);
  const double extra_cpu_s = slowdown > 0 && !slowed_sync_ ? slowdown * unslowed_compute_cpu_s_ : 0.0;
  if (extra_cpu_s > 0) spin_for_cpu_seconds(extra_cpu_s);
  const std::size_t tp_first = tp_.stats().records().size();
  if (scaler_) task_.set_loss_scale(scaler_->scale());
  r.loss_scale = scaler_ ? scaler_->scale() : 1.0;
  if (unit_gather_) unit_gather_->take_figures();  // evaluation's gathers are not this step's
  const double local_loss = task_.forward_backward(step);
  if (step + 1 == inject_overflow_step_) {
    // every gradient of this rank: also those the norm leaves out (a pipeline's second copy of
    // a tied embedding), which the optimizer would otherwise apply; under ZeRO-2 the shard, the
    // only gradients left
    const bool sharded = zero_ && zero_->reduces_every_micro_batch();
    const std::uint16_t infinity = config_.precision.dtype == "bf16"
                                       ? to_bf16(std::numeric_limits<float>::infinity()).bits
                                       : to_fp16(std::numeric_limits<float>::infinity()).bits;
    if (storage_)
      std::fill_n(storage_->main_gradients().data(), storage_->main_gradients().size(), infinity);
    else if (sharded && zero_->gradient_type() != parallel::DataType::f32)
      std::fill_n(zero_->shard_gradient_bits().data(), zero_->shard_gradient_bits().size(), infinity);
    else
      fill_floats(sharded ? zero_->shard_gradients() : task_.gradients_flat(), device_,
                  std::numeric_limits<float>::infinity());
  }
  finish_queued_work();
  r.backward_end_s = comm_clock_seconds();
  r.cpu_backward_end_s = process_cpu_seconds();
  const auto& tp_records = tp_.stats().records();
  for (std::size_t i = tp_first; i < tp_records.size(); ++i) r.tp_comm_s += tp_records[i].seconds;
  PipelineTimes pipeline = task_.pipeline_times();
  r.p2p_s = pipeline.p2p_s;
  r.bubble_s = pipeline.bubble_s;
  r.pipeline_ops = std::move(pipeline.ops);
  if (all_reduce_) r.exchange = all_reduce_->last_step();
  if (zero_) r.exchange = zero_->last_step();
  if (storage_) r.exchange = storage_->last_step();
  if (unit_gather_) {  // ZeRO-3's parameter gathers inside forward and backward: not compute
    const UnitGatherFigures gathers = unit_gather_->take_figures();
    r.exchange.in_backward_s += gathers.wait_s;
    r.exchange.cpu_in_backward_s += gathers.cpu_wait_s;
    r.exchange.bytes += gathers.bytes;
  }
  r.loss = dp_.size() > 1 ? dp_.all_reduce_value(local_loss) / dp_.size() : local_loss;
  r.loss_end_s = comm_clock_seconds();
  r.lr = learning_rate_at(config_.optimizer, step, config_.warmup_steps, total_steps);
  // Non-finite gradients never reach the weights: fp16 skips the step, fp32 stops after it
  // (non_finite_check.hpp) with the gradients left as they are, for naming the layer.
  if (constraints_) constraints_->constrain_gradients(task_.gradients_flat());
  r.grad_norm = optimizer_step_(r.lr, {.loss_scale = r.loss_scale, .skip_non_finite = true});
  r.skipped = !std::isfinite(r.grad_norm);
  if (scaler_) scaler_->update(r.skipped);
  finish_queued_work();
  r.optimizer_end_s = comm_clock_seconds();
  const bool master_sharded = zero_ && zero_->holds_parameter_shard() && !unit_gather_;
  if (constraints_ && !r.skipped && master_sharded)  // before the 16-bit shards are gathered
    constraints_->constrain_parameters(zero_->parameter_shard(), zero_->shard_begin());
  if (zero_ && !r.skipped) {
    const double gather_start_s = comm_clock_seconds();
    zero_->gather_parameters();
    if (storage_) {  // ZeRO-1 with 16-bit main gradients: the all-gather added to their figures
      r.exchange.exposed_s += comm_clock_seconds() - gather_start_s;
      r.exchange.in_flight_s += comm_clock_seconds() - gather_start_s;
    } else {
      r.exchange = zero_->last_step();  // the all-gather's time and bytes added
    }
  }
  if (constraints_ && !r.skipped && !master_sharded) constraints_->constrain_parameters(task_.parameters_flat());
  if (!r.skipped && !master_sharded) {  // (sharded: the gather wrote the 16-bit weights)
    task_.parameters_updated();
    round_storage_shard();
  }
  finish_queued_work();  // the 16-bit weights' rounding is the step's work too
  r.end_s = comm_clock_seconds();
  // what the next step's slowdown is a share of (without an exchange): the CPU compute without
  // the added work
  const double own_cpu = r.own_cpu_s();
  unslowed_compute_cpu_s_ = own_cpu > 0 ? r.compute_cpu_s() * std::max(0.0, own_cpu - extra_cpu_s) / own_cpu : 0.0;
  return r;
}

}  // namespace sb::train
