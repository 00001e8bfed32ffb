// SPDX-License-Identifier: Apache-2.0
// GradientPageReturn: pages go back once every float on them is consumed; a consumed range on a
// page that stays is zeroed in place, and a range consumed twice before its page went back (the
// model chunks of an interleaved stage) is counted once; held pages (ZeRO-2/3's) go back only when
// asked, every held run of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "core/memory.hpp"
#include "train/gradient_page_return.hpp"

namespace sb::train {
namespace {

struct Pages {
  MemoryTracker tracker;
  std::int64_t page_floats = resident_page_bytes() / 4;
  std::int64_t floats = 3 * page_floats;  // three pages
  TrackedBuffer buffer{tracker, MemoryCategory::comm, floats * 4, "gradients", Device::cpu, Residency::resident_pages};
  std::span<float> gradients{buffer.as<float>(), static_cast<std::size_t>(floats)};
  void write_all(float value) { std::fill(gradients.begin(), gradients.end(), value); }
  std::int64_t resident() { return buffer.recharge_resident(); }
};

TEST(GradientPageReturn, WholePagesGoBackAndAStraddlingPageWaitsForBothSides) {
  Pages p;
  GradientPageReturn pages(&p.buffer, p.gradients, "test");
  p.write_all(1.0f);
  const std::int64_t half = p.page_floats / 2, page = resident_page_bytes();
  pages.consumed(0, p.page_floats + half);  // page 0 whole, page 1 half
  EXPECT_EQ(p.resident(), 2 * page);
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats)], 0.0f) << "the consumed half of page 1 is zeroed";
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats + half)], 1.0f) << "the other half is untouched";
  EXPECT_FALSE(pages.all_given_back());
  pages.consumed(p.page_floats + half, p.floats);
  EXPECT_EQ(p.resident(), 0);
  EXPECT_TRUE(pages.all_given_back());
}

TEST(GradientPageReturn, ARangeTakenTwiceBeforeItsPageWentBackCountsOnce) {
  Pages p;
  GradientPageReturn pages(&p.buffer, p.gradients, "test");
  const std::int64_t half = p.page_floats / 2;
  const std::int64_t chunk = p.page_floats + half;  // two chunks meet in the middle of page 1
  p.write_all(1.0f);
  pages.consumed(chunk, p.floats);  // chunk 1, micro-batch 0
  std::fill(p.gradients.begin() + chunk, p.gradients.end(), 2.0f);  // chunk 1's next backward
  pages.consumed(chunk, p.floats);  // chunk 1, micro-batch 1: page 1 must stay for chunk 0
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats)], 1.0f) << "chunk 0's gradient on page 1 kept";
  EXPECT_FALSE(pages.all_given_back());
  pages.consumed(0, chunk);  // chunk 0, micro-batch 0
  EXPECT_TRUE(pages.all_given_back());
  EXPECT_EQ(p.resident(), 0);
}

TEST(GradientPageReturn, AStraddlingPageBackForOneSideGoesBackAtTheStepsEnd) {
  Pages p;
  GradientPageReturn pages(&p.buffer, p.gradients, "test");
  const std::int64_t chunk = p.page_floats + p.page_floats / 2;
  p.write_all(1.0f);
  pages.consumed(0, chunk);  // chunk 0, micro-batch 0
  pages.consumed(chunk, p.floats);  // chunk 1, micro-batch 0: page 1 goes back
  std::fill(p.gradients.begin(), p.gradients.begin() + chunk, 3.0f);  // chunk 0's micro-batch 1
  pages.consumed(0, chunk);  // page 1 holds chunk 0's side only now
  EXPECT_FALSE(pages.all_given_back());
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats)], 0.0f) << "the consumed side zeroed";
  pages.give_back_consumed();
  EXPECT_TRUE(pages.all_given_back());
  EXPECT_EQ(p.resident(), 0);
}

TEST(GradientPageReturn, HeldPagesGoBackOnlyWhenAsked) {
  Pages p;
  const std::int64_t page = resident_page_bytes();
  GradientPageReturn pages(&p.buffer, p.gradients, "test", GradientPageReturn::Return::when_asked);
  p.write_all(1.0f);
  pages.consumed(2 * p.page_floats, p.floats);  // backward's ranges, from the end down
  pages.consumed(p.page_floats, 2 * p.page_floats);
  EXPECT_EQ(p.resident(), 3 * page) << "consumed pages are held";
  EXPECT_FALSE(pages.all_given_back()) << "held pages are not given back";
  pages.give_back_held();
  EXPECT_EQ(p.resident(), page) << "pages 1 and 2 went back, page 0 was not consumed";
  EXPECT_EQ(p.gradients[0], 1.0f);
  pages.consumed(0, p.page_floats);
  EXPECT_EQ(p.resident(), page);
  pages.give_back_held();
  EXPECT_EQ(p.resident(), 0);
  EXPECT_TRUE(pages.all_given_back());
}

TEST(GradientPageReturn, HeldRunsApartAllGoBackAndAPartlyConsumedPageIsZeroedAtOnce) {
  Pages p;
  const std::int64_t page = resident_page_bytes();
  GradientPageReturn pages(&p.buffer, p.gradients, "test", GradientPageReturn::Return::when_asked);
  p.write_all(1.0f);
  const std::int64_t half = p.page_floats / 2;
  pages.consumed(2 * p.page_floats, p.floats);
  pages.consumed(0, p.page_floats + half);  // page 0 whole, page 1 half: apart from page 2
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats)], 0.0f) << "the consumed half of page 1 is zeroed";
  EXPECT_EQ(p.gradients[static_cast<std::size_t>(p.page_floats + half)], 1.0f);
  EXPECT_EQ(p.resident(), 3 * page);
  pages.give_back_held();
  EXPECT_EQ(p.resident(), page) << "pages 0 and 2 went back, page 1 waits for its other half";
  pages.consumed(p.page_floats + half, 2 * p.page_floats);
  pages.give_back_consumed();  // gives back what is held, too
  EXPECT_EQ(p.resident(), 0);
  EXPECT_TRUE(pages.all_given_back());
}

}  // namespace
}  // namespace sb::train
