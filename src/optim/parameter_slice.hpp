// SPDX-License-Identifier: Apache-2.0
// What an optimizer sees of a model: named runs of parameters with their gradients. Leaves
// out shapes and ownership, so optimizers do not depend on any model.
#pragma once

#include <cstdint>
#include <string>

namespace sb::optim {

struct ParameterSlice {
  std::string name;
  float* param = nullptr;      // (numel), updated in place
  float* grad = nullptr;       // (numel), may be scaled in place by gradient clipping
  std::int64_t numel = 0;
  bool weight_decay = false;   // decoupled decay applies (matrices, embeddings)
  // An identical copy of a tensor another model-parallel rank also holds (a tp-replicated
  // LayerNorm, the head stage's copy of the tied embedding): counted once in a norm summed
  // over ranks, so that norm is the unsplit model's.
  bool replica = false;
};

}  // namespace sb::optim
