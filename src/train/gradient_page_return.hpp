// SPDX-License-Identifier: Apache-2.0
// The model's fp32 gradients as a staging area that is given back to the system as it is
// consumed (ZeRO-2/3, and 16-bit main gradients): once every float on a page has been taken
// (reduced, or added into the main gradients) the page goes back, zeroed, and the next
// backward faults it in again. So only the ranges backward is writing are resident. Leaves out
// what consumes the ranges (data_parallel.hpp, storage_main_gradients.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/memory.hpp"

namespace sb::train {

class GradientPageReturn {
 public:
  // `pages`: the model's gradient buffer, charged by resident pages, holding `gradients`
  // (checked; `who` names the strategy in the message).
  GradientPageReturn(TrackedBuffer* pages, std::span<float> gradients, const char* who);
  // Gradients [begin, end) (floats) are consumed: pages whose every byte is, go back.
  void consumed(std::int64_t begin, std::int64_t end);
  // Charges the tracker what is resident now: what backward wrote since the last call (the
  // peak), or what is left after pages went back.
  void recharge() { pages_->recharge_resident(); }
  // Whether every page was consumed whole since they last all went back (the end of a
  // micro-batch whose backward reported every gradient).
  bool all_given_back() const;

 private:
  TrackedBuffer* pages_;
  std::vector<std::int64_t> consumed_;  // per page, bytes consumed since it last went back
};

}  // namespace sb::train
