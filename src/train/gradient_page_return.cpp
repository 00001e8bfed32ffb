// SPDX-License-Identifier: Apache-2.0
// Giving consumed gradient pages back to the system, in runs of whole pages.
#include "train/gradient_page_return.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::train {

GradientPageReturn::GradientPageReturn(TrackedBuffer* pages, std::span<float> gradients, const char* who)
    : pages_(pages) {
  SB_CHECK(pages_ && pages_->residency() == Residency::resident_pages && pages_->as<float>() == gradients.data(),
           "{}: the model's gradients must be a buffer charged by resident pages", who);
  const std::int64_t page = resident_page_bytes();
  consumed_.assign(static_cast<std::size_t>((pages_->bytes() + page - 1) / page), 0);
}

void GradientPageReturn::consumed(std::int64_t begin, std::int64_t end) {
  const std::int64_t page = resident_page_bytes(), total = pages_->bytes();
  const std::int64_t byte_begin = begin * 4, byte_end = end * 4;
  std::int64_t run_begin = -1, run_end = -1;  // consecutive whole pages, given back in one call
  const auto give_back_run = [&] {
    if (run_begin >= 0) pages_->discard(run_begin, run_end - run_begin);
    run_begin = run_end = -1;
  };
  for (std::int64_t p = byte_begin / page; p * page < byte_end; ++p) {
    const std::int64_t lo = std::max(byte_begin, p * page), hi = std::min(byte_end, (p + 1) * page);
    std::int64_t& consumed = consumed_[static_cast<std::size_t>(p)];
    consumed += hi - lo;
    const std::int64_t capacity = std::min(page, total - p * page);
    if (consumed < capacity) {
      give_back_run();
      continue;
    }
    if (run_begin < 0) run_begin = p * page;
    run_end = p * page + capacity;
    consumed = 0;
  }
  give_back_run();
}

bool GradientPageReturn::all_given_back() const {
  return std::all_of(consumed_.begin(), consumed_.end(), [](std::int64_t c) { return c == 0; });
}

}  // namespace sb::train
