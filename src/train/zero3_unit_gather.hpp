// SPDX-License-Identifier: Apache-2.0
// ZeRO-3's parameter gathers: a model's unit (an embedding, a block, a head) assembled from the
// data-parallel ranks' parameter shards into one of two unit buffers just before the unit is
// read, the next unit's gather started behind it into the other (FSDP's prefetch), and the
// buffer reused once the unit has been read; and the whole model gathered into its own flat
// parameters for a reader of all of them (a checkpoint). Leaves out the gradients' reduction
// and the optimizer's shard (ZeroSharding, data_parallel.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/memory.hpp"
#include "core/unit_parameter_gather.hpp"
#include "parallel/communicator.hpp"

namespace sb::train {

// What the gathers cost this rank since the figures were last taken.
struct UnitGatherFigures {
  double wait_s = 0;      // inside gather() and prefetch(): starting calls and waiting for them (exposed)
  double cpu_wait_s = 0;  // this process's CPU time in those calls
  std::int64_t bytes = 0;  // parameter bytes received and held, every rank's pieces
};

// `full`: the model's flat parameter buffer (N elements of `element_bytes`: fp32, or the 16-bit
// weights under mixed precision; charged by resident pages, held only while gathered whole);
// `shard`: this rank's elements [rank·shard_size, + shard.size() / element_bytes), the persistent
// copy. Rank q holds [q·shard_size, min((q+1)·shard_size, N)). Each range of a unit is gathered
// by one all-gatherv over the ranks whose shards it crosses (their pieces lie consecutively in
// rank order), in place in the unit buffer, this rank's piece copied in from its shard first.
// The two unit buffers (category comm) grow to the largest unit gathered.
class Zero3UnitGather final : public UnitParameterGather {
 public:
  Zero3UnitGather(parallel::Communicator& dp, TrackedBuffer& full, std::span<const std::byte> shard,
                  std::int64_t shard_size, std::int64_t element_bytes, MemoryTracker& tracker);
  const std::byte* gather(std::span<const FlatRange> unit) override;
  void prefetch(std::span<const FlatRange> unit) override;
  void release(std::span<const FlatRange> unit) override;
  // Every parameter gathered into `full` (a checkpoint's write), and given back after it.
  void gather_everything();
  void release_everything();
  UnitGatherFigures take_figures();

 private:
  enum class SlotState { free, in_flight, held };
  struct Slot {
    TrackedBuffer buffer;
    SlotState state = SlotState::free;
    std::vector<FlatRange> unit;
    std::vector<parallel::Request> requests;
  };
  Slot* slot_of(std::span<const FlatRange> unit, SlotState state);
  Slot& free_slot(std::int64_t bytes);
  void start(std::span<const FlatRange> unit, std::byte* into, std::vector<parallel::Request>& requests);

  parallel::Communicator& dp_;
  TrackedBuffer& full_;
  std::span<const std::byte> shard_;
  std::int64_t shard_size_, element_bytes_, parameters_;
  MemoryTracker& tracker_;
  std::array<Slot, 2> slots_;
  UnitGatherFigures figures_;
};

}  // namespace sb::train
