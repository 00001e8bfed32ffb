// SPDX-License-Identifier: Apache-2.0
// The two ways add_rounded sums fp16 arrays (rounded_sum.hpp): the portable loop over the
// scalar rounded_sum (the definition), and the x86 F16C conversions around an fp32 add, eight
// at a time, which give the same bits for every input (a block whose sum is NaN is summed by the
// portable loop). add_rounded takes F16C where the CPU reports it; tests hold both paths against
// the scalar sum.
#pragma once

#include <cstdint>

#include "precision/fp16.hpp"

namespace sb {

void add_rounded_fp16_portable(fp16* into, const fp16* add, std::int64_t n);
// Only where sb::cpu_has_f16c() (core/cpu_isa.hpp).
void add_rounded_fp16_f16c(fp16* into, const fp16* add, std::int64_t n);

}  // namespace sb
