// SPDX-License-Identifier: Apache-2.0
// ZeRO-3's per-unit gathers: one all-gatherv per range into a unit buffer of two, in place.
#include "train/zero3_unit_gather.hpp"

#include <algorithm>
#include <vector>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"

namespace sb::train {

namespace {
// Adds the wall and CPU time of its scope to the figures' waits.
class WaitClock {
 public:
  explicit WaitClock(UnitGatherFigures& figures)
      : figures_(figures), t0_(parallel::comm_clock_seconds()), cpu0_(process_cpu_seconds()) {}
  WaitClock(const WaitClock&) = delete;
  WaitClock& operator=(const WaitClock&) = delete;
  ~WaitClock() {
    figures_.wait_s += parallel::comm_clock_seconds() - t0_;
    figures_.cpu_wait_s += process_cpu_seconds() - cpu0_;
  }

 private:
  UnitGatherFigures& figures_;
  double t0_, cpu0_;
};

std::int64_t elements_of(std::span<const FlatRange> unit) {
  std::int64_t n = 0;
  for (const FlatRange& r : unit) n += r.count;
  return n;
}

// The unit's ranges with each run of adjacent ones joined: the same elements, packed the same
// way, in as few collectives as the layout allows (a GPT block's tensors are one run).
std::vector<FlatRange> joined_runs(std::span<const FlatRange> unit) {
  std::vector<FlatRange> runs;
  for (const FlatRange& r : unit) {
    if (!runs.empty() && runs.back().offset + runs.back().count == r.offset)
      runs.back().count += r.count;
    else
      runs.push_back(r);
  }
  return runs;
}
}  // namespace

Zero3UnitGather::Zero3UnitGather(parallel::Communicator& dp, TrackedBuffer& full, std::span<const std::byte> shard,
                                 std::int64_t shard_size, std::int64_t element_bytes, MemoryTracker& tracker)
    : dp_(dp),
      full_(full),
      shard_(shard),
      shard_size_(shard_size),
      element_bytes_(element_bytes),
      parameters_(full.bytes() / element_bytes),
      tracker_(tracker) {
  SB_CHECK(element_bytes == 2 || element_bytes == 4, "zero-3: gathers of {}-byte elements", element_bytes);
  SB_CHECK(full.residency() == Residency::resident_pages, "zero-3: the model's parameters must be a buffer charged "
           "by resident pages");
  SB_CHECK(shard_size >= 1 && shard_size * dp.size() >= parameters_, "zero-3: shards of {} elements over {} ranks "
           "for {} parameters", shard_size, dp.size(), parameters_);
  release_everything();
}

// Each run of adjacent ranges: the ranks' pieces are consecutive in rank order, so one
// all-gatherv in place fills it; this rank's piece is copied from its shard first. `into`: the
// ranges packed.
void Zero3UnitGather::start(std::span<const FlatRange> unit, std::byte* into, std::vector<parallel::Request>& requests) {
  const std::int64_t e = element_bytes_;
  const std::int64_t mine_begin = shard_size_ * dp_.rank();
  std::vector<std::int64_t> counts(static_cast<std::size_t>(dp_.size()));
  for (const FlatRange& r : joined_runs(unit)) {
    SB_CHECK(r.offset >= 0 && r.count >= 0 && r.offset + r.count <= parameters_,
             "zero-3: unit range [{}, {}) outside the {} parameters", r.offset, r.offset + r.count, parameters_);
    for (int q = 0; q < dp_.size(); ++q) {
      const std::int64_t lo = std::max(r.offset, q * shard_size_);
      const std::int64_t hi = std::min({r.offset + r.count, (q + 1) * shard_size_, parameters_});
      counts[static_cast<std::size_t>(q)] = std::max<std::int64_t>(0, hi - lo) * e;  // bytes
      if (q == dp_.rank() && hi > lo)
        std::copy(shard_.begin() + (lo - mine_begin) * e, shard_.begin() + (hi - mine_begin) * e,
                  into + (lo - r.offset) * e);
    }
    figures_.bytes += r.count * e;
    if (r.count > 0) requests.push_back(dp_.iall_gatherv_in_place(into, counts, parallel::DataType::u8));
    into += r.count * e;
  }
}

Zero3UnitGather::Slot* Zero3UnitGather::slot_of(std::span<const FlatRange> unit, SlotState state) {
  for (Slot& slot : slots_)
    if (slot.state == state && std::equal(unit.begin(), unit.end(), slot.unit.begin(), slot.unit.end())) return &slot;
  return nullptr;
}

// A free unit buffer of at least `bytes`, grown if it is smaller.
Zero3UnitGather::Slot& Zero3UnitGather::free_slot(std::int64_t bytes) {
  const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == SlotState::free; });
  SB_CHECK(free != slots_.end(), "zero-3: both unit buffers are in use (a unit gathered or prefetched without a "
           "release)");
  if (free->buffer.bytes() < bytes)
    free->buffer = TrackedBuffer(tracker_, MemoryCategory::comm, bytes, "zero-3 gathered unit");
  return *free;
}

const std::byte* Zero3UnitGather::gather(std::span<const FlatRange> unit) {
  const WaitClock clock(figures_);
  Slot* slot = slot_of(unit, SlotState::in_flight);
  if (!slot) {
    slot = &free_slot(elements_of(unit) * element_bytes_);
    slot->unit.assign(unit.begin(), unit.end());
    start(unit, slot->buffer.as<std::byte>(), slot->requests);
  }
  parallel::wait_all(slot->requests);
  slot->requests.clear();
  slot->state = SlotState::held;
  return slot->buffer.as<std::byte>();
}

void Zero3UnitGather::prefetch(std::span<const FlatRange> unit) {
  const WaitClock clock(figures_);
  Slot& slot = free_slot(elements_of(unit) * element_bytes_);
  slot.unit.assign(unit.begin(), unit.end());
  slot.state = SlotState::in_flight;
  start(unit, slot.buffer.as<std::byte>(), slot.requests);
}

void Zero3UnitGather::release(std::span<const FlatRange> unit) {
  Slot* slot = slot_of(unit, SlotState::held);
  SB_CHECK(slot != nullptr, "zero-3: release of a unit that is not gathered");
  slot->state = SlotState::free;
}

void Zero3UnitGather::gather_everything() {
  const WaitClock clock(figures_);
  const FlatRange all{0, parameters_};
  std::vector<parallel::Request> requests;
  start(std::span<const FlatRange>(&all, 1), full_.as<std::byte>(), requests);
  parallel::wait_all(requests);
  full_.recharge_resident();
}

void Zero3UnitGather::release_everything() {
  full_.discard(0, full_.bytes());
  full_.recharge_resident();
}

UnitGatherFigures Zero3UnitGather::take_figures() {
  const UnitGatherFigures taken = figures_;
  figures_ = {};
  return taken;
}

}  // namespace sb::train
