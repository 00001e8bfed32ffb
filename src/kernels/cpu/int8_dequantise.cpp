// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/int8_dequantise.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

// One row of OC outputs; scale (OC) holds inp_scale·weight_scale[o]. std::fma is exact
// whichever instruction computes it, so the vector clone gives the reference's bits.
SB_CPU_VECTOR_CLONES
void dequantise_row(float* __restrict out, const std::int32_t* __restrict sums, const float* __restrict scale,
                    const float* __restrict bias, i64 OC) {
  if (bias) {
    for (i64 o = 0; o < OC; ++o) out[o] = std::fma(static_cast<float>(sums[o]), scale[o], bias[o]);
  } else {
    for (i64 o = 0; o < OC; ++o) out[o] = std::fma(static_cast<float>(sums[o]), scale[o], 0.0f);
  }
}

}  // namespace

void dequantise_rows(float* out, const std::int32_t* sums, float inp_scale, const float* weight_scale,
                     const float* bias, i64 rows, i64 OC) {
  if (rows <= 0 || OC <= 0) return;
  thread_local std::vector<float> scales;
  scales.resize(static_cast<std::size_t>(OC));
  for (i64 o = 0; o < OC; ++o) scales[o] = inp_scale * weight_scale[o];
  const float* scale = scales.data();
  parallel_for_chunks("sb::int8_dequantise_rows", rows, std::max<i64>(1, kElementwiseChunk / OC),
                      [=](i64 begin, i64 end) {
                        for (i64 r = begin; r < end; ++r) dequantise_row(out + r * OC, sums + r * OC, scale, bias, OC);
                      });
}

}  // namespace sb::kernels::cpu
