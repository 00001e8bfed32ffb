// SPDX-License-Identifier: Apache-2.0
// What an optimizer sees of a model: named runs of parameters with their gradients. Leaves
// out shapes and ownership, so optimizers do not depend on any model.
#pragma once

#include <cstdint>
#include <string>

namespace sb::optim {

// How a slice's gradient is stored: fp32 (ParameterSlice::grad), or 16-bit main gradients
// (precision.main_grads storage: ParameterSlice::grad_bits, bf16 or fp16 bits).
enum class GradientStorage { fp32, bf16, fp16 };

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
  // 16-bit main gradients instead of grad (which is then null): (numel) values of
  // grad_storage, never written; the optimizer widens them a chunk at a time
  // (optim/storage_gradients.hpp) and applies the clipping coefficient as it does.
  const std::uint16_t* grad_bits = nullptr;
  GradientStorage grad_storage = GradientStorage::fp32;
};

}  // namespace sb::optim
