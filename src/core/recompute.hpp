// SPDX-License-Identifier: Apache-2.0
// Activation recomputation, as the config names it (strategy.recompute): which activations a
// model drops after its forward and recomputes in its backward. One enum for the models that
// run it and the cost model that predicts it; what each mode drops is the model's own.
#pragma once

#include <string_view>

#include "core/check.hpp"

namespace sb {

enum class Recompute {
  none,       // every activation the backward reads is kept
  selective,  // the attention core (Korthikanti et al. 2022, §5): softmax probabilities recomputed
  full,       // only each block's input kept; the block's forward runs again in the backward
};

// "none" | "selective" | "full" (the config has already checked the spelling).
inline Recompute recompute_from_string(std::string_view name) {
  if (name == "none") return Recompute::none;
  if (name == "selective") return Recompute::selective;
  SB_CHECK(name == "full", "recompute '{}' is not none, selective or full", name);
  return Recompute::full;
}

}  // namespace sb
