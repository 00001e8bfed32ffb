// SPDX-License-Identifier: Apache-2.0
// Element-wise work on arrays of 16-bit floats held as their bits (bf16 or f16, named by the
// communicator's DataType): what 16-bit main gradients are accumulated, rounded, scaled and
// summed with. Each result is computed in fp32 and rounded once to nearest even. Leaves out the
// conversions themselves (precision/) and where the arrays live.
#pragma once

#include <cstdint>
#include <span>

#include "parallel/communicator.hpp"

namespace sb::train {

// out[i] = type(float(a[i]) · scale + b[i]) for i < n; a or b may be null (0 there); out may
// alias a.
void add_scaled(parallel::DataType type, std::uint16_t* out, const std::uint16_t* a, float scale, const float* b,
                std::int64_t n);
// into[i] = into[i] + add[i] in `type` (precision/rounded_sum.hpp: a + b and b + a, the same bits).
void add_rounded(parallel::DataType type, std::span<std::uint16_t> into, std::span<const std::uint16_t> add);

}  // namespace sb::train
