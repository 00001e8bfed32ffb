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
//
// Whole consumed pages go back at once, or are held until give_back_held(): ZeRO-2 and 3 give
// a bucket's pages back as the bucket's reduction starts (DeepSpeed's and FSDP's gradients are
// freed as buckets finish), in as few calls as the runs allow. Each madvise flushes TLBs and
// frees page by page: on a 2-vCPU KVM guest a resnet-mini dp 2 ZeRO-2 step's 15-20 runs cost
// 20-400 us each one by one; given back per bucket its exposed data-parallel time fell from 2.4
// to 1.2 ms and its step from 21.6 to 19.7 ms (median of 5 alternating pairs).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/memory.hpp"

namespace sb::train {

class GradientPageReturn {
 public:
  // at_once: each whole page goes back when consumed. when_asked: held until give_back_held(),
  // for a consumer that asks before any backward writes a consumed page again (ZeRO-2/3: pp 1,
  // one backward per micro-batch, then micro_batch_done or finish).
  enum class Return { at_once, when_asked };
  // `pages`: the model's gradient buffer, charged by resident pages, holding `gradients`
  // (checked; `who` names the strategy in the message).
  GradientPageReturn(TrackedBuffer* pages, std::span<float> gradients, const char* who,
                     Return when = Return::at_once);
  // Gradients [begin, end) (floats) are consumed: pages whose every byte is, go back (or are
  // held: Return::when_asked).
  void consumed(std::int64_t begin, std::int64_t end);
  // The whole consumed pages held so far go back, adjacent ones in one call.
  void give_back_held();
  // Charges the tracker what is resident now: what backward wrote since the last call (the
  // peak), or what is left after pages went back.
  void recharge() { pages_->recharge_resident(); }
  // Whether every page was consumed whole since they last all went back (the end of a step, or
  // of a micro-batch whose backward reported every gradient), and none is held.
  bool all_given_back() const;
  // Every page still held with something consumed on it goes back: at the end of a step whose
  // every range was consumed for the last time (a page straddling two model chunks may have
  // gone back between their micro-batches and come back for one side only).
  void give_back_consumed();

 private:
  // Whole pages [begin, end) (bytes) go back, or join the held runs.
  void give_back(std::int64_t begin, std::int64_t end);

  TrackedBuffer* pages_;
  Return when_;
  std::vector<std::pair<std::int64_t, std::int64_t>> held_;  // whole consumed pages [begin, end) in bytes
  std::vector<std::int64_t> consumed_;  // per page, bytes consumed since it last went back
  // per page, the byte ranges [lo, hi) consumed since it last went back
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> taken_;
};

}  // namespace sb::train
