// SPDX-License-Identifier: Apache-2.0
// Tracked allocations: charge on construction, release on destruction and move, peaks.
#include <gtest/gtest.h>

#include "core/check.hpp"
#include "core/memory.hpp"

namespace sb {
namespace {

TEST(MemoryTracker, ChargesByCategoryAndKeepsPeaks) {
  MemoryTracker tracker;
  {
    TrackedBuffer params(tracker, MemoryCategory::params, 1000, "params");
    TrackedBuffer acts(tracker, MemoryCategory::activations, 500, "acts");
    EXPECT_EQ(tracker.usage().of(MemoryCategory::params), 1000);
    EXPECT_EQ(tracker.usage().of(MemoryCategory::activations), 500);
    EXPECT_EQ(tracker.usage().total_current, 1500);
    TrackedBuffer moved = std::move(acts);
    EXPECT_EQ(tracker.usage().total_current, 1500);
    EXPECT_EQ(acts.data(), nullptr);
    EXPECT_EQ(moved.bytes(), 500);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(moved.data()) % 64, 0u);
  }
  EXPECT_EQ(tracker.usage().total_current, 0);
  EXPECT_EQ(tracker.usage().total_peak, 1500);
  EXPECT_EQ(tracker.usage().peak_of(MemoryCategory::params), 1000);
}

TEST(MemoryTracker, ReleasingMoreThanChargedIsAnError) {
  MemoryTracker tracker;
  tracker.charge(MemoryCategory::grads, 10);
  EXPECT_THROW(tracker.release(MemoryCategory::grads, 11), Error);
}

TEST(PeakRss, IsPositiveAndGrowsWithTouchedMemory) {
  const auto before = peak_rss_bytes();
  EXPECT_GT(before, 0);
  MemoryTracker tracker;
  TrackedBuffer big(tracker, MemoryCategory::workspace, 64 << 20, "big");  // zeroed = touched
  EXPECT_GE(peak_rss_bytes(), before + (60 << 20));
}

}  // namespace
}  // namespace sb
