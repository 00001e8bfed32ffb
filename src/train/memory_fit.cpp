// SPDX-License-Identifier: Apache-2.0
// The ranks on one node come from the thread allocation (thread_allocation.hpp); the heaviest
// rank's prediction stands for each of them, so the host check errs towards letting a run try.
#include "train/memory_fit.hpp"

#include <fmt/format.h>

#include "core/check.hpp"

namespace sb::train {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / kGiB); }

double total(const plan::PredictedMemory& m) { return m.params + m.grads + m.optimizer + m.activations; }

}  // namespace

std::string memory_refusal(const plan::TrainConfig& c, const plan::PredictedMemory& predicted, int ranks_sharing,
                           const MemoryLimit& limit, const std::string& where) {
  const double need = total(predicted) * ranks_sharing;
  if (total(predicted) <= 0 || limit.bytes <= 0 || need * (1 - kMemoryPredictionMargin) <= limit.bytes) return "";
  return fmt::format(
      "{}: the run needs {} per rank (predicted: params {}, grads {}, optimizer {}, activations {}){} but {} has "
      "{} ({}); lower batch.global, raise strategy.micro_batches, shard with strategy.zero or spread over more ranks",
      c.source, gib(total(predicted)), gib(predicted.params), gib(predicted.grads), gib(predicted.optimizer),
      gib(predicted.activations), ranks_sharing > 1 ? fmt::format(", {} for its {} ranks", gib(need), ranks_sharing) : "",
      where, gib(limit.bytes), limit.source);
}

void refuse_if_memory_does_not_fit(const plan::TrainConfig& c, const plan::RunPrediction* prediction, Device device,
                                   int node_ranks) {
  if (prediction == nullptr) return;
  const int sharing = device == Device::cpu ? node_ranks : 1;
  const std::string where = device == Device::cpu ? fmt::format("host {}", host_name())
                                                  : fmt::format("the GPU of {}", where_am_i());
  const std::string refusal = memory_refusal(c, prediction->memory, sharing, free_memory_on(device), where);
  SB_USER_CHECK(refusal.empty(), "{}", refusal);
}

}  // namespace sb::train
