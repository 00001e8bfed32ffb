// SPDX-License-Identifier: Apache-2.0
// ZeRO-3's parameter gathers: a model's unit (an embedding, a block, a head) assembled from the
// data-parallel ranks' parameter shards into the model's own parameter buffer just before the
// unit is read, the next unit's gather started behind it (FSDP's prefetch), and the unit's
// pages given back once it has been read. Leaves out the gradients' reduction and the
// optimizer's shard (ZeroSharding, data_parallel.hpp).
#pragma once

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
  double wait_s = 0;      // inside gather(): starting calls and waiting for them (exposed)
  double cpu_wait_s = 0;  // this process's CPU time in those calls
  std::int64_t bytes = 0;  // parameter bytes received and held, every rank's pieces
  std::int64_t gathers = 0;
};

// `full`: the model's flat parameter buffer (N elements of `element_bytes`: fp32, or the 16-bit
// weights under mixed precision; charged by resident pages); `shard`: this rank's elements
// [rank·shard_size, + shard.size() / element_bytes), the persistent copy. Rank q holds
// [q·shard_size, min((q+1)·shard_size, N)). A range of a unit is gathered in place by one
// all-gatherv over the ranks whose shards it crosses, each rank's piece copied in from its shard
// first; a unit's release gives back every page lying wholly inside its ranges (pages it shares
// with other tensors keep stale values, which nothing reads before gathering them again).
class Zero3UnitGather final : public UnitParameterGather {
 public:
  Zero3UnitGather(parallel::Communicator& dp, TrackedBuffer& full, std::span<const std::byte> shard,
                  std::int64_t shard_size, std::int64_t element_bytes);
  void gather(std::span<const FlatRange> unit) override;
  void prefetch(std::span<const FlatRange> unit) override;
  void release(std::span<const FlatRange> unit) override;
  // Every parameter gathered (a checkpoint's write), and given back after it.
  void gather_everything();
  void release_everything();
  UnitGatherFigures take_figures();

 private:
  struct InFlight {
    std::vector<FlatRange> unit;
    std::vector<parallel::Request> requests;
  };
  void start(std::span<const FlatRange> unit, InFlight& into);
  void finish(InFlight& unit);
  bool overlaps_in_flight(std::int64_t begin, std::int64_t end) const;

  parallel::Communicator& dp_;
  TrackedBuffer& full_;
  std::span<const std::byte> shard_;
  std::int64_t shard_size_, element_bytes_, parameters_;
  std::vector<InFlight> in_flight_;  // prefetched units, oldest first
  UnitGatherFigures figures_;
};

}  // namespace sb::train
