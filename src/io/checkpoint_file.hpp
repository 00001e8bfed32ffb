// SPDX-License-Identifier: Apache-2.0
// A training checkpoint as an HDF5 file: scalar attributes (step, identity of the run, loss
// scaler, RNG position) and every rank's share of the state (fp32 parameters, untrained model
// state, optimizer tensors over a flat parameter range). Written to a temporary file beside the
// target, flushed to disk and renamed over it, so a process killed mid-write leaves the
// previous checkpoint intact. Leaves out what the values mean (train/checkpoint.hpp).
//
// Layout (format "scalebench-checkpoint", version 1):
//   /                      attrs: format, version, then the caller's attributes
//   /ranks/<world rank>/   attrs: rank, dp_rank, tp_rank, pp_rank, optimizer_begin
//     parameters           float32 (N) this rank's flat fp32 (master) parameters; empty when
//                          another data-parallel rank holds the same copy
//     untrained_state      float32 (S) BatchNorm running statistics (empty without)
//     optimizer/<name>     float32 (count) optimizer tensor over parameters
//                          [optimizer_begin, optimizer_begin + count)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/attr_value.hpp"

namespace sb::io {

struct CheckpointRank {
  std::int64_t rank = 0, dp_rank = 0, tp_rank = 0, pp_rank = 0;
  std::int64_t optimizer_begin = 0;
  std::vector<float> parameters;       // (N) or empty
  std::vector<float> untrained_state;  // (S)
  std::vector<std::pair<std::string, std::vector<float>>> optimizer;  // each (count)
};

struct Checkpoint {
  Attributes attributes;
  std::vector<CheckpointRank> ranks;  // by world rank
};

// Writes `checkpoint` to `path` atomically (temporary file, fsync, rename). Environment
// SB_CHECKPOINT_WRITE_PAUSE_MS=N sleeps N ms after each dataset (for the kill-mid-write test).
void write_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);
// That pause: 0 when unset; UserError unless an integer from 0 to 60000.
std::int64_t checkpoint_write_pause_ms();

// Reads the attributes and every rank's header; the tensors only of the ranks `wanted` accepts
// (all when it is empty). UserError naming the file when it is not a scalebench checkpoint.
Checkpoint read_checkpoint(const std::filesystem::path& path,
                           const std::function<bool(const CheckpointRank& header)>& wanted = {});

// Finds an attribute; UserError naming the file when it is missing.
const AttrValue& checkpoint_attribute(const Checkpoint& checkpoint, const std::string& name,
                                      const std::filesystem::path& path);

}  // namespace sb::io
