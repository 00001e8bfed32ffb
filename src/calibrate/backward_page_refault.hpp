// SPDX-License-Identifier: Apache-2.0
// What giving gradient pages back costs where the trainer pays it: inside a backward. ZeRO-2/3 and
// 16-bit main gradients give each range of the fp32 gradients back once it is consumed, and the
// next micro-batch's backward faults every page in again (two faults: dweight += reads the zero
// page, then writes a page of its own) from inside its GEMMs, between the reads of weights and
// activations, where a loop that only touches the pages (page_refault.hpp) runs on warm page-walk
// caches. On this project's 2-vCPU Xeon guest the loop found 2.6 us a page and the trainer paid
// 3.6 (pp 2, bf16, 16-bit main gradients: 23 ms of compute a rank-step, against 16.5 priced).
// Timed here as the difference of one model's backward with its gradient pages given back just
// before and with them resident. Leaves out the other ranks (the caller times with as many
// processes at once as its row says) and the cuda back-end.
#pragma once

#include <cstdint>
#include <string>

namespace sb::calibrate {

struct BackwardPageRefault {
  double seconds_per_byte = 0;     // (median given-back backward - median resident one) / gradient bytes
  double resident_backward_s = 0;  // the medians
  double given_back_backward_s = 0;
  std::int64_t gradient_bytes = 0;  // the model's fp32 gradients
  int passes = 0;                   // of each kind, alternating
};

// gpt-tiny's micro-batch of `batch` sequences on the cpu back-end in `precision` ("fp32",
// "bf16", "fp16"), its gradient buffer charged by resident pages as under ZeRO-2; each pass runs
// the forward untimed and then times the backward, alternately with the buffer given back
// (madvise MADV_DONTNEED, inside the timing, as the trainer gives ranges back during its backward)
// and resident. In this process's threads.
BackwardPageRefault measure_backward_page_refault(const std::string& precision, std::int64_t batch = 4,
                                                  int passes = 7);

}  // namespace sb::calibrate
