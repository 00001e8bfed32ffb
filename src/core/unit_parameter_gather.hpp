// SPDX-License-Identifier: Apache-2.0
// How a model reads weights it does not hold whole (ZeRO-3, fully sharded parameters): before a
// unit's forward, and again before its backward, it asks for the unit's parameter ranges; it
// names the unit it will read next, so their gather can overlap this unit's compute (FSDP's
// prefetch); and it hands the ranges back when done. Leaves out how they travel and where the
// shards live (train/zero3_unit_gather.hpp).
#pragma once

#include <cstdint>
#include <span>

namespace sb {

// Elements [offset, offset + count) of a model's flat parameters.
struct FlatRange {
  std::int64_t offset = 0, count = 0;
  friend bool operator==(const FlatRange&, const FlatRange&) = default;
};

class UnitParameterGather {
 public:
  virtual ~UnitParameterGather() = default;
  // On return the flat parameters hold the unit's values in all of its ranges (sorted by
  // offset, disjoint).
  virtual void gather(std::span<const FlatRange> unit) = 0;
  // Starts gathering the unit that will be read next (gather() then waits for it).
  virtual void prefetch(std::span<const FlatRange> unit) = 0;
  // The unit's values are no longer read: its memory may go.
  virtual void release(std::span<const FlatRange> unit) = 0;
};

}  // namespace sb
