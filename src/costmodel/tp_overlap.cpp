// SPDX-License-Identifier: Apache-2.0
#include "costmodel/tp_overlap.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::costmodel {

TpSeconds overlapped_tp_seconds(const TpOverlapWindows& windows, double pair_s, double blocks, bool embedding,
                                bool full_recompute) {
  SB_CHECK(pair_s >= 0 && blocks >= 0, "tp overlap of {} blocks, a pair of {} s", blocks, pair_s);
  const auto exposed = [&](double window) { return std::max(0.0, pair_s - window); };
  const double forward = exposed(windows.attention_forward) + exposed(windows.mlp_forward);
  const double backward = exposed(windows.attention_backward) + exposed(windows.mlp_backward);
  return {blocks * forward + (embedding ? pair_s : 0.0), blocks * (backward + (full_recompute ? forward : 0.0))};
}

}  // namespace sb::costmodel
