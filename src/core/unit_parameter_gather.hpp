// SPDX-License-Identifier: Apache-2.0
// How a model reads weights it does not hold whole (ZeRO-3, fully sharded parameters): before a
// unit's forward, and again before its backward, it asks for the unit's parameter ranges and
// reads them where the answer says; it names the unit it will read next, so their gather can
// overlap this unit's compute (FSDP's prefetch); and it hands the unit back when done. Leaves
// out how they travel and where the shards live (train/zero3_unit_gather.hpp).
#pragma once

#include <cstddef>
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
  // The unit's values (ranges sorted by offset, disjoint), packed one range after another in
  // their order, in the model's parameter type; valid until release(unit).
  virtual const std::byte* gather(std::span<const FlatRange> unit) = 0;
  // Starts gathering the unit that will be read next (gather() then waits for it).
  virtual void prefetch(std::span<const FlatRange> unit) = 0;
  // The unit's values are no longer read: their memory may be reused.
  virtual void release(std::span<const FlatRange> unit) = 0;
};

}  // namespace sb
