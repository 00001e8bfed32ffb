// SPDX-License-Identifier: Apache-2.0
// Giving consumed gradient pages back to the system, in runs of whole pages.
#include "train/gradient_page_return.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/check.hpp"

namespace sb::train {

GradientPageReturn::GradientPageReturn(TrackedBuffer* pages, std::span<float> gradients, const char* who,
                                       Return when)
    : pages_(pages), when_(when) {
  SB_CHECK(pages_ && pages_->residency() == Residency::resident_pages && pages_->as<float>() == gradients.data(),
           "{}: the model's gradients must be a buffer charged by resident pages", who);
  const std::int64_t page = resident_page_bytes();
  consumed_.assign(static_cast<std::size_t>((pages_->bytes() + page - 1) / page), 0);
  taken_.resize(consumed_.size());
}

void GradientPageReturn::consumed(std::int64_t begin, std::int64_t end) {
  const std::int64_t page = resident_page_bytes(), total = pages_->bytes();
  const std::int64_t byte_begin = begin * 4, byte_end = end * 4;
  std::int64_t run_begin = -1, run_end = -1;  // consecutive whole pages, given back in one call
  const auto give_back_run = [&] {
    if (run_begin >= 0) give_back(run_begin, run_end);
    run_begin = run_end = -1;
  };
  for (std::int64_t p = byte_begin / page; p * page < byte_end; ++p) {
    const std::int64_t lo = std::max(byte_begin, p * page), hi = std::min(byte_end, (p + 1) * page);
    std::int64_t& consumed = consumed_[static_cast<std::size_t>(p)];
    std::vector<std::pair<std::int64_t, std::int64_t>>& taken = taken_[static_cast<std::size_t>(p)];
    const std::int64_t capacity = std::min(page, total - p * page);
    if (hi - lo < capacity) {  // part of the page: counted once however often it is taken
      if (std::find(taken.begin(), taken.end(), std::make_pair(lo, hi)) == taken.end()) {
        taken.emplace_back(lo, hi);
        consumed += hi - lo;
      }
    } else {
      consumed = capacity;
    }
    if (consumed < capacity) {  // the page stays: the range's next backward adds from zero
      give_back_run();
      std::memset(pages_->as<std::byte>() + lo, 0, static_cast<std::size_t>(hi - lo));
      continue;
    }
    if (run_begin < 0) run_begin = p * page;
    run_end = p * page + capacity;
    consumed = 0;
    taken.clear();
  }
  give_back_run();
}

void GradientPageReturn::give_back(std::int64_t begin, std::int64_t end) {
  if (when_ == Return::at_once) {
    pages_->discard(begin, end - begin);
    return;
  }
  if (!held_.empty() && held_.back().first == end)  // backward reports ranges downwards
    held_.back().first = begin;
  else if (!held_.empty() && held_.back().second == begin)
    held_.back().second = end;
  else
    held_.emplace_back(begin, end);
}

void GradientPageReturn::give_back_held() {
  for (const auto& [begin, end] : held_) pages_->discard(begin, end - begin);
  held_.clear();
}

void GradientPageReturn::give_back_consumed() {
  give_back_held();
  const std::int64_t page = resident_page_bytes(), total = pages_->bytes();
  for (std::size_t p = 0; p < consumed_.size(); ++p) {
    if (consumed_[p] == 0) continue;
    const auto at = static_cast<std::int64_t>(p) * page;
    pages_->discard(at, std::min(page, total - at));
    consumed_[p] = 0;
    taken_[p].clear();
  }
}

bool GradientPageReturn::all_given_back() const {
  return held_.empty() && std::all_of(consumed_.begin(), consumed_.end(), [](std::int64_t c) { return c == 0; });
}

}  // namespace sb::train
