// SPDX-License-Identifier: Apache-2.0
// ZeRO-3's per-unit gathers: in place into the model's parameter buffer, one all-gatherv per
// range, pages given back on release.
#include "train/zero3_unit_gather.hpp"

#include <algorithm>

#include "core/check.hpp"
#include "core/cpu_clock.hpp"

namespace sb::train {

Zero3UnitGather::Zero3UnitGather(parallel::Communicator& dp, TrackedBuffer& full, std::span<const std::byte> shard,
                                 std::int64_t shard_size, std::int64_t element_bytes)
    : dp_(dp),
      full_(full),
      shard_(shard),
      shard_size_(shard_size),
      element_bytes_(element_bytes),
      parameters_(full.bytes() / element_bytes) {
  SB_CHECK(element_bytes == 2 || element_bytes == 4, "zero-3: gathers of {}-byte elements", element_bytes);
  SB_CHECK(full.residency() == Residency::resident_pages, "zero-3: the model's parameters must be a buffer charged "
           "by resident pages");
  SB_CHECK(shard_size >= 1 && shard_size * dp.size() >= parameters_, "zero-3: shards of {} elements over {} ranks "
           "for {} parameters", shard_size, dp.size(), parameters_);
  release_everything();
}

bool Zero3UnitGather::overlaps_in_flight(std::int64_t begin, std::int64_t end) const {
  for (const InFlight& unit : in_flight_)
    for (const FlatRange& r : unit.unit)
      if (r.offset < end && begin < r.offset + r.count) return true;
  return false;
}

// Each range: the ranks' pieces are consecutive in rank order, so one all-gatherv in place
// fills it; this rank's piece is copied from its shard first.
void Zero3UnitGather::start(std::span<const FlatRange> unit, InFlight& into) {
  into.unit.assign(unit.begin(), unit.end());
  std::byte* full = full_.as<std::byte>();
  const std::int64_t e = element_bytes_;
  const std::int64_t mine_begin = shard_size_ * dp_.rank();
  std::vector<std::int64_t> counts(static_cast<std::size_t>(dp_.size()));
  for (const FlatRange& r : unit) {
    SB_CHECK(r.offset >= 0 && r.count >= 0 && r.offset + r.count <= parameters_,
             "zero-3: unit range [{}, {}) outside the {} parameters", r.offset, r.offset + r.count, parameters_);
    for (int q = 0; q < dp_.size(); ++q) {
      const std::int64_t lo = std::max(r.offset, q * shard_size_);
      const std::int64_t hi = std::min({r.offset + r.count, (q + 1) * shard_size_, parameters_});
      counts[static_cast<std::size_t>(q)] = std::max<std::int64_t>(0, hi - lo) * e;  // bytes
      if (q == dp_.rank() && hi > lo)
        std::copy(shard_.begin() + (lo - mine_begin) * e, shard_.begin() + (hi - mine_begin) * e, full + lo * e);
    }
    figures_.bytes += r.count * e;
    if (r.count > 0) into.requests.push_back(dp_.iall_gatherv_in_place(full + r.offset * e, counts, parallel::DataType::u8));
  }
  ++figures_.gathers;
}

void Zero3UnitGather::finish(InFlight& unit) {
  parallel::wait_all(unit.requests);
  unit.requests.clear();
}

void Zero3UnitGather::gather(std::span<const FlatRange> unit) {
  const double t0 = parallel::comm_clock_seconds(), cpu0 = process_cpu_seconds();
  // units prefetched before this one, then this one (prefetched or not)
  bool found = false;
  while (!in_flight_.empty() && !found) {
    found = std::equal(unit.begin(), unit.end(), in_flight_.front().unit.begin(), in_flight_.front().unit.end());
    finish(in_flight_.front());
    in_flight_.erase(in_flight_.begin());
  }
  if (!found) {
    InFlight now;
    start(unit, now);
    finish(now);
  }
  full_.recharge_resident();
  figures_.wait_s += parallel::comm_clock_seconds() - t0;
  figures_.cpu_wait_s += process_cpu_seconds() - cpu0;
}

void Zero3UnitGather::prefetch(std::span<const FlatRange> unit) {
  const double t0 = parallel::comm_clock_seconds(), cpu0 = process_cpu_seconds();
  in_flight_.emplace_back();
  start(unit, in_flight_.back());
  figures_.wait_s += parallel::comm_clock_seconds() - t0;
  figures_.cpu_wait_s += process_cpu_seconds() - cpu0;
}

void Zero3UnitGather::release(std::span<const FlatRange> unit) {
  const std::int64_t page = resident_page_bytes();
  for (const FlatRange& r : unit) {
    const std::int64_t e = element_bytes_;
    const std::int64_t first = (r.offset * e + page - 1) / page;  // pages wholly inside the range
    const std::int64_t last = (r.offset + r.count) * e / page;    // one past
    std::int64_t run = first;  // the first page of the run of pages to give back, [run, p)
    for (std::int64_t p = first; p <= last; ++p) {
      const bool keep = p == last || overlaps_in_flight(p * page / e, (p + 1) * page / e);
      if (!keep) continue;
      if (p > run) full_.discard(run * page, (p - run) * page);
      run = p + 1;
    }
  }
  full_.recharge_resident();
}

void Zero3UnitGather::gather_everything() {
  SB_CHECK(in_flight_.empty(), "zero-3: gathering everything with {} unit(s) in flight", in_flight_.size());
  const FlatRange all{0, parameters_};
  gather(std::span<const FlatRange>(&all, 1));
}

void Zero3UnitGather::release_everything() {
  SB_CHECK(in_flight_.empty(), "zero-3: releasing everything with {} unit(s) in flight", in_flight_.size());
  full_.discard(0, full_.bytes());
  full_.recharge_resident();
}

UnitGatherFigures Zero3UnitGather::take_figures() {
  const UnitGatherFigures taken = figures_;
  figures_ = {};
  return taken;
}

}  // namespace sb::train
