// SPDX-License-Identifier: Apache-2.0
// exchange_work: the trainer's passes over the gradients and parameters per exchange path, read
// off its code (the function named beside each count); each pass counts what it reads and writes.
#include "costmodel/exchange_work.hpp"

#include <cmath>

#include "parallel/zero_shard.hpp"

namespace sb::costmodel {

namespace {

constexpr double kFloat = 4.0, kSixteen = 2.0;

// ZeRO-1 and 2 after the optimizer (ZeroSharding::gather_parameters): in mixed precision the
// shard rounded into the 16-bit weights (read fp32, write 16 bits) and gathered in place; in fp32
// the shard copied into the padded buffer, gathered, and the whole copied into the parameters.
void add_parameter_gather(ExchangeWork& w, bool mixed, double parameters, double shard, int dp) {
  if (mixed) {
    w.after_optimizer_bytes += shard * (kFloat + kSixteen);
    w.after_optimizer_gather_bytes = parameters * kSixteen;
  } else {
    w.after_optimizer_bytes += 2 * shard * kFloat + 2 * parameters * kFloat;
    w.after_optimizer_gather_bytes = shard * dp * kFloat;
  }
}

// ZeroSharding stages 2 and 3 with gradient shards of `g` bytes (4, or 2 with 16-bit main
// gradients): the shard zeroed once a step; each micro-batch's gradients staged into buckets
// (fp32: copied; 16 bits: rounded) and the owned pieces of the reduced buckets added into the
// shard (the last micro-batch's after backward); the shard scaled by 1/dp.
void add_sharded_reduction(ExchangeWork& w, double g, double parameters, double shard, std::int64_t micro_batches) {
  const double add_pieces = 3 * shard * g;
  w.backward_bytes_per_micro_batch += parameters * (kFloat + g);
  w.backward_bytes_per_step += shard * g + static_cast<double>(micro_batches - 1) * add_pieces;
  w.finish_bytes += add_pieces + 2 * shard * g;
}

// 16-bit main gradients (StorageMainGradients): zeroed once a step; every micro-batch's fp32
// gradients added into them (read fp32 and 16 bits, write 16 bits), unless the weight-gradient
// GEMMs accumulate into them themselves (strategy.grad_accumulation_fusion).
void add_sixteen_bit_accumulation(ExchangeWork& w, double parameters, bool fused) {
  w.backward_bytes_per_step += parameters * kSixteen;
  if (!fused) w.backward_bytes_per_micro_batch += parameters * (kFloat + 2 * kSixteen);
}

}  // namespace

ExchangeWork exchange_work(const plan::TrainConfig& config, double parameters, int dp, std::int64_t micro_batches) {
  ExchangeWork w;
  const int zero = static_cast<int>(config.strategy.zero);
  const bool storage = config.precision.sixteen_bit_main_gradients();
  const bool mixed = config.precision.dtype != "fp32";
  const double shard = static_cast<double>(parallel::zero_shard_size(std::llround(parameters), dp));
  if (storage && zero <= 1) {
    add_sixteen_bit_accumulation(w, parameters, config.strategy.grad_accumulation_fusion);
    if (dp > 1 && zero == 1) {  // StorageMainGradients::reduce_scatter, then the 16-bit weights' gather
      w.finish_bytes += 2 * parameters * kSixteen + 2 * shard * kSixteen;
      w.reduce_scatter_bytes = shard * dp * kSixteen;
      add_parameter_gather(w, mixed, parameters, shard, dp);
    } else if (dp > 1 || config.precision.dtype == "fp16") {  // the mean (or the loss scale's inverse) back
      w.finish_bytes += 2 * parameters * kSixteen;
    }
    return w;
  }
  if (dp <= 1) return w;
  if (zero == 0) {  // BucketedAllReduce: packed in the last backward, copied back and scaled after
    w.backward_bytes_per_step += 2 * parameters * kFloat;
    w.finish_bytes += 4 * parameters * kFloat;
    return w;
  }
  if (zero == 1) {  // ZeroSharding::finish: padded copy, reduce-scatter, the shard scaled out of it
    w.finish_bytes += 2 * parameters * kFloat + 2 * shard * kFloat;
    w.reduce_scatter_bytes = shard * dp * kFloat;
    add_parameter_gather(w, mixed, parameters, shard, dp);
    return w;
  }
  add_sharded_reduction(w, storage ? kSixteen : kFloat, parameters, shard, micro_batches);
  if (zero == 2) add_parameter_gather(w, mixed, parameters, shard, dp);
  return w;
}

}  // namespace sb::costmodel
