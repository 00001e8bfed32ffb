// SPDX-License-Identifier: Apache-2.0
// Where non-finite values (NaN, ±Inf) sit in a model's tensors: named fp32 views listed in
// forward order and the first of them holding a non-finite value. Used only after a cheap
// per-step check (the loss, the gradient norm) has already failed. Leaves out 16-bit storage
// (callers list only their fp32 tensors) and any communication between ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sb {

// A named fp32 tensor, or one layer's slice of one: "blocks.3.fcw" with layer 3, "wte" with
// layer -1 (not inside a numbered layer).
struct NamedValues {
  std::string name;
  std::int64_t layer = -1;
  std::span<const float> values;
};

struct NonFiniteHit {
  std::size_t tensor = 0;       // index into the list scanned
  std::int64_t element = 0;     // first non-finite element of that tensor
  float value = 0;              // NaN, inf or -inf
};

// The first tensor of `tensors` (in list order) holding a NaN or an infinity, with the first
// such element; nullopt when every value is finite.
std::optional<NonFiniteHit> first_non_finite(std::span<const NamedValues> tensors);

// "blocks.3.fcw (layer 3)", or "wte" for a tensor outside the numbered layers.
std::string describe_tensor(const NamedValues& tensor);

}  // namespace sb
