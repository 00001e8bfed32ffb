// SPDX-License-Identifier: Apache-2.0
#include "costmodel/tp_overlap.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::costmodel {

TpSeconds overlapped_tp_seconds(const TpOverlapWindows& windows, double pair_s, double all_gather_s, double blocks,
                                bool embedding, RecomputedPairs recomputed) {
  SB_CHECK(pair_s >= 0 && all_gather_s >= 0 && all_gather_s <= pair_s && blocks >= 0,
           "tp overlap of {} blocks, a pair of {} s, its all-gather {} s", blocks, pair_s, all_gather_s);
  const auto exposed = [](double collective, double window) { return std::max(0.0, collective - window); };
  const double forward = exposed(pair_s, windows.attention_forward) + exposed(pair_s, windows.mlp_forward);
  const double backward = exposed(pair_s, windows.attention_backward) + exposed(pair_s, windows.mlp_backward);
  const double rerun = recomputed == RecomputedPairs::whole ? forward
                       : recomputed == RecomputedPairs::early_stopped
                           ? exposed(pair_s, windows.attention_forward) +
                                 exposed(all_gather_s, windows.mlp_input_forward)
                           : 0.0;
  return {blocks * forward + (embedding ? pair_s : 0.0), blocks * (backward + rerun)};
}

}  // namespace sb::costmodel
