// SPDX-License-Identifier: Apache-2.0
// A case resolved for a world size: the one description of a run that the trainer runs and
// the cost model predicts (local batch, micro-batches, pipeline stages by one rule, the
// micro-batches each stage holds at once, every refusal a config and a world can decide).
// Leaves out what needs a machine (a site's memory and node size: the cost model) and what
// this trainer cannot run yet (the trainer's capability check).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpt/gpt_config.hpp"
#include "plan/config.hpp"
#include "plan/pipeline_schedule.hpp"

namespace sb::plan {

// A ResNet name trains on images; every other name, and an inline description, is a GPT.
bool trains_resnet(const TrainConfig& config);
// The GPT a config names or describes inline (sizes not yet validated).
gpt::GptConfig gpt_config_of(const TrainConfig& config);
// The sequence length a GPT case trains at: its seq_len, else its model's maximum.
std::int64_t gpt_seq_len(const TrainConfig& config);
// Units a pipeline stage is built from: GPT blocks, or the ResNet's stem, blocks and head.
std::int64_t pipeline_units_of(const TrainConfig& config);

// Why a plan cannot run, as a kind (plan groups its rejections by it).
enum class Refusal { none, devices, tp_heads, pp_layers, batch_split, interleave, sequence_parallel };

// One pipeline stage (a model chunk under interleaving): its units [unit_begin, unit_end) (GPT
// blocks, or ResNet units: stem, blocks, head) and the micro-batches whose activations it holds
// at once under the schedule.
struct StagePlan {
  std::int64_t unit_begin = 0, unit_end = 0;
  std::int64_t in_flight = 1;
  bool operator==(const StagePlan&) const = default;
};

struct RunPlan {
  bool feasible = false;
  Refusal refusal = Refusal::none;
  std::string reason;  // one sentence without the file name, when !feasible
  bool resnet = false;
  std::int64_t world_size = 0, dp = 1, tp = 1, pp = 1;
  std::int64_t global_batch = 0, local_batch = 0;  // samples per step: all ranks, one replica
  std::int64_t micro_batches = 0, micro_batch = 0;  // per rank and step, and samples in each
  std::int64_t seq_len = 0;                         // tokens per sample; 0 for images
  std::int64_t units = 0;                           // pipeline units of the model
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  // Model chunks per pp rank (strategy.interleave, v): the units are cut into pp·v chunks by the
  // stage rule and rank r holds chunks r, r + pp, r + 2pp, … (Megatron-LM's assignment).
  std::int64_t interleave = 1;
  std::string stage_rule;          // "list" (strategy.stages), "balanced" or "even"
  std::vector<std::int64_t> stages;  // units per chunk in model order, pp·v entries
  std::vector<StagePlan> stage_plans;  // per chunk in model order; in_flight: that chunk's own
  bool operator==(const RunPlan&) const = default;

  // Local chunk k (< interleave) of pp rank r: model chunk k·pp + r.
  const StagePlan& chunk(int pp_rank, std::int64_t k) const {
    return stage_plans.at(static_cast<std::size_t>(k * pp + pp_rank));
  }
  const StagePlan& stage(int pp_rank) const { return chunk(pp_rank, 0); }
};

// `result` refused: not feasible, with the kind of refusal and its one-sentence reason (a plan,
// or a prediction made from one).
template <class Result, class Kind>
Result refused(Result result, Kind kind, std::string reason) {
  result.feasible = false;
  result.refusal = kind;
  result.reason = std::move(reason);
  return result;
}

// The plan of `config` on `world_size` ranks (0: dp·tp·pp). What no world size could fix
// (stages that do not add up, an unknown model) is a UserError naming the file and key; what a
// world or a batch decides comes back with feasible = false, a Refusal and a reason.
RunPlan resolve_run_plan(const TrainConfig& config, std::int64_t world_size = 0);

// The plan, or a UserError "<file>: <reason>" when it cannot run.
RunPlan runnable_plan(const TrainConfig& config, std::int64_t world_size = 0);

// Units per chunk by the config's rule, pp·interleave entries: strategy.stages as given, or `even`
// (Megatron-LM: blocks split evenly, the first stages taking one more), or `balanced` (the
// contiguous split whose most expensive stage by forward FLOPs is cheapest; the GPT's head is
// counted on its last block, the embedding's lookups as free).
std::vector<std::int64_t> stage_sizes_of(const TrainConfig& config, std::int64_t micro_batch,
                                         std::int64_t seq_len);

}  // namespace sb::plan
