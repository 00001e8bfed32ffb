// SPDX-License-Identifier: Apache-2.0
// The non-finite check of a training step and the scan that names the first layer at fault.
#include "train/non_finite_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/check.hpp"
#include "core/finite_scan.hpp"
#include "parallel/gather_text.hpp"
#include "train/device_staging.hpp"

namespace sb::train {

namespace {

// This rank's finding: a sort key (activations before gradients, earlier stages first, then
// forward order) and where it is, "" when this rank holds no non-finite value.
struct Finding {
  std::int64_t key = std::numeric_limits<std::int64_t>::max();
  std::string where;
};

// The tensors as host copies (their storage appended to `held`), for the scan on the host: the
// task's tensors may be on the GPU. Only a step that already failed pays for the copies.
std::vector<NamedValues> staged_on_host(std::vector<NamedValues> tensors, Device device,
                                        std::vector<std::vector<float>>& held) {
  held.reserve(held.size() + tensors.size());
  for (NamedValues& t : tensors) {
    held.push_back(copy_to_host(t.values, device));
    t.values = held.back();
  }
  return tensors;
}

Finding scan_this_rank(TrainingTask& task, int pp_rank, int rank, int world_size) {
  std::vector<std::vector<float>> held;
  const std::string on_rank = world_size > 1 ? fmt::format(" on rank {}", rank) : "";
  const auto key = [pp_rank](std::int64_t kind, std::size_t index) {
    return (kind << 48) + (static_cast<std::int64_t>(pp_rank) << 32) + static_cast<std::int64_t>(index);
  };
  const std::vector<NamedValues> activations = staged_on_host(task.forward_values(), task.device(), held);
  if (const auto hit = first_non_finite(activations)) {
    const NamedValues& t = activations[hit->tensor];
    const std::string what = t.name == "losses" ? std::string("the per-token losses")
                                                : "the forward activation " + describe_tensor(t);
    return {key(0, hit->tensor), fmt::format("({}) first appeared in {}{}", hit->value, what, on_rank)};
  }
  const std::vector<NamedValues> gradients = staged_on_host(task.gradient_values(), task.device(), held);
  if (const auto hit = first_non_finite(gradients)) {
    const NamedValues& t = gradients[hit->tensor];
    return {key(1, hit->tensor),
            fmt::format("({}) first appeared in the gradient of {}{}", hit->value, describe_tensor(t), on_rank)};
  }
  return {};
}

}  // namespace

void stop_if_non_finite(const plan::TrainConfig& c, std::int64_t step, double loss, double grad_norm, bool loss_scaling,
                        TrainingTask& task, parallel::Communicator& world, int pp_rank) {
  if (std::isfinite(loss) && (loss_scaling || std::isfinite(grad_norm))) return;
  Finding first = scan_this_rank(task, pp_rank, world.rank(), world.size());
  if (world.size() > 1) {
    // rank 0 picks the earliest finding and tells every rank, so all report one sentence
    const std::vector<std::string> all = parallel::gather_text(world, fmt::format("{} {}", first.key, first.where));
    std::string chosen;
    if (world.rank() == 0) {
      first = {};
      for (const std::string& text : all) {
        std::istringstream in(text);
        Finding f;
        in >> f.key;
        std::getline(in >> std::ws, f.where);
        if (f.key < first.key) first = f;
      }
      chosen = first.where;
    }
    auto length = static_cast<std::int64_t>(chosen.size());
    world.broadcast(&length, 1, parallel::DataType::i64, 0);
    chosen.resize(static_cast<std::size_t>(length));
    world.broadcast(chosen.data(), length, parallel::DataType::u8, 0);
    first.where = chosen;
  }
  const std::string where = first.where.empty()
                                ? std::string("values appeared but no tensor of the model holds one any more")
                                : "values " + first.where;
  throw UserError(fmt::format("{}: step {}: non-finite {}; the loss is {} and the gradient norm {} (training "
                              "diverged: lower optimizer.lr?)",
                              c.source, step, where, loss, grad_norm));
}

}  // namespace sb::train
