// SPDX-License-Identifier: Apache-2.0
// The per-tensor scan for non-finite values.
#include "core/finite_scan.hpp"

#include <fmt/format.h>

#include <cmath>

namespace sb {

std::optional<NonFiniteHit> first_non_finite(std::span<const NamedValues> tensors) {
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::span<const float> v = tensors[t].values;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return NonFiniteHit{t, static_cast<std::int64_t>(i), v[i]};
  }
  return std::nullopt;
}

std::string describe_tensor(const NamedValues& tensor) {
  return tensor.layer >= 0 ? fmt::format("{} (layer {})", tensor.name, tensor.layer) : tensor.name;
}

}  // namespace sb
