// SPDX-License-Identifier: Apache-2.0
// The model's fp32 gradients as a staging area that is given back to the system as it is
// consumed (ZeRO-2/3, and 16-bit main gradients): once every float on a page has been taken
// (reduced, or added into the main gradients) the page goes back, zeroed, and the next
// backward faults it in again. So only the ranges backward is writing are resident. A consumed
// range on a page that stays resident (its neighbour not yet taken) is zeroed in place, so the
// range's next backward adds from zero wherever it lies; a range taken again before its page went
// back (the model chunks of an interleaved pipeline stage finish their micro-batches in any
// order, and a page may straddle two chunks) is not counted twice. Leaves out what consumes the
// ranges (data_parallel.hpp, storage_main_gradients.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
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
  // Whether every page was consumed whole since they last all went back (the end of a step, or
  // of a micro-batch whose backward reported every gradient).
  bool all_given_back() const;
  // Every page still held with something consumed on it goes back: at the end of a step whose
  // every range was consumed for the last time (a page straddling two model chunks may have
  // gone back between their micro-batches and come back for one side only).
  void give_back_consumed();

 private:
  TrackedBuffer* pages_;
  std::vector<std::int64_t> consumed_;  // per page, bytes consumed since it last went back
  // per page, the byte ranges [lo, hi) consumed since it last went back
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> taken_;
};

}  // namespace sb::train
