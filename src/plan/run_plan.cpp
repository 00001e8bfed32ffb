// SPDX-License-Identifier: Apache-2.0
// Resolving a case into its plan: model sizes come from the named or inline config, never
// from data, so the plan is the same wherever it is made (a rank, predict, plan, a suite).
#include "plan/run_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "core/balanced_partition.hpp"
#include "core/check.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb::plan {

namespace {

using i64 = std::int64_t;

// The reason a grid cannot hold the model, or nothing: tp divides the GPT's heads and splits
// no ResNet; pp is at most the units a stage can hold.
std::optional<std::pair<Refusal, std::string>> grid_refusal(const TrainConfig& c, i64 units) {
  const StrategySpec& s = c.strategy;
  if (trains_resnet(c) && s.tp != 1)
    return std::pair{Refusal::tp_heads,
                     fmt::format("strategy.tp {} splits a GPT's attention heads and MLP; model {} trains with dp and "
                                 "pp (use tp 1)", s.tp, c.model.name)};
  if (!trains_resnet(c)) {
    const gpt::GptConfig g = gpt_config_of(c);
    if (g.heads % s.tp != 0)
      return std::pair{Refusal::tp_heads,
                       fmt::format("strategy.tp {} must divide the {} attention heads of model {} (each "
                                   "tensor-parallel rank computes whole heads)", s.tp, g.heads, g.name)};
    if (gpt::gpt_kv_heads(g) % s.tp != 0)
      return std::pair{Refusal::tp_heads,
                       fmt::format("strategy.tp {} must divide the {} key/value heads of model {} (each "
                                   "tensor-parallel rank holds whole key/value heads)", s.tp, gpt::gpt_kv_heads(g),
                                   g.name)};
  }
  if (s.interleave > 1 && s.pp * s.interleave > units)
    return std::pair{Refusal::pp_layers,
                     fmt::format("strategy.pp {} × strategy.interleave {} = {} model chunks, but model {} has {} {}; "
                                 "each chunk needs at least one", s.pp, s.interleave, s.pp * s.interleave,
                                 c.model.name, units,
                                 trains_resnet(c) ? "layers (stem, blocks and head)" : "blocks")};
  if (s.pp > units)
    return std::pair{Refusal::pp_layers,
                     fmt::format("strategy.pp {} asks for more pipeline stages than model {} has {} ({}); each "
                                 "stage needs at least one", s.pp, c.model.name, units,
                                 trains_resnet(c) ? "layers: stem, blocks and head" : "blocks")};
  return std::nullopt;
}

// The micro-batch plan of a config: the local batch / strategy.micro_batches, or batch.micro,
// or the local batch; the reason when the batch does not split so.
std::optional<std::string> batch_refusal(const TrainConfig& c, RunPlan& p) {
  const i64 dp = c.strategy.dp, m = c.strategy.micro_batches;
  if (c.global_batch % dp != 0)
    return fmt::format("batch.global ({}) must be a multiple of strategy.dp ({}): each rank trains an equal share",
                       c.global_batch, dp);
  p.local_batch = c.global_batch / dp;
  const i64 local = p.local_batch;
  if (m > 0) {
    if (local % m != 0)
      return fmt::format("the batch per rank (batch.global {} / strategy.dp {} = {}) must be a multiple of "
                         "strategy.micro_batches ({})", c.global_batch, dp, local, m);
    if (c.micro_batch != 0 && c.micro_batch * m != local)
      return fmt::format("batch.micro {} × strategy.micro_batches {} must equal the batch per rank (batch.global {} "
                         "/ strategy.dp {} = {}); give one of the two", c.micro_batch, m, c.global_batch, dp, local);
    p.micro_batch = local / m;
  } else {
    p.micro_batch = c.micro_batch > 0 ? c.micro_batch : local;
    if (local % p.micro_batch != 0)
      return fmt::format("the batch per rank (batch.global {} / strategy.dp {} = {}) must be a multiple of "
                         "batch.micro ({})", c.global_batch, dp, local, p.micro_batch);
  }
  p.micro_batches = local / p.micro_batch;
  return std::nullopt;
}

// The reason strategy.interleave cannot run with this schedule, grid or batch, or nothing:
// Megatron-LM's interleaved 1F1B needs pp > 1, schedule 1f1b and micro-batches in groups of pp.
std::optional<std::string> interleave_refusal(const TrainConfig& c, i64 micro_batches) {
  const StrategySpec& s = c.strategy;
  if (s.interleave == 1) return std::nullopt;
  if (s.pp == 1)
    return fmt::format("strategy.interleave {} splits each pipeline rank's layers into virtual stages; it needs "
                       "strategy.pp > 1 (got 1)", s.interleave);
  if (s.schedule != "1f1b")
    return fmt::format("strategy.interleave {} runs Megatron-LM's interleaved 1F1B schedule; it needs "
                       "strategy.schedule 1f1b, not {}", s.interleave, s.schedule);
  if (micro_batches % s.pp != 0)
    return fmt::format("strategy.interleave {} needs the micro-batches per step ({}: strategy.micro_batches or "
                       "batch.micro) to be a multiple of strategy.pp ({}): Megatron-LM's interleaved schedule "
                       "runs them through the chunks in groups of pp", s.interleave, micro_batches, s.pp);
  return std::nullopt;
}

// The reason strategy.sequence_parallel cannot run, or nothing: Megatron-LM's sequence
// parallelism cuts a GPT's LayerNorm and residual token rows (micro-batch × sequence) over the
// tensor-parallel group, so it needs tp > 1 and rows that divide by it.
std::optional<std::string> sequence_parallel_refusal(const TrainConfig& c, const RunPlan& p) {
  const StrategySpec& s = c.strategy;
  if (s.tp_overlap && !s.sequence_parallel)
    return "strategy.tp_overlap runs the sequence-parallel all-gathers and reduce-scatters under the linear layers' "
           "GEMMs; it needs strategy.sequence_parallel true";
  if (!s.sequence_parallel) return std::nullopt;
  if (p.resnet)
    return fmt::format("strategy.sequence_parallel splits a transformer's token rows; model {} is a ResNet",
                       c.model.name);
  if (s.tp == 1)
    return "strategy.sequence_parallel splits the tensor-parallel group's token rows; it needs strategy.tp > 1 "
           "(got 1)";
  if ((p.micro_batch * p.seq_len) % s.tp != 0)
    return fmt::format("strategy.sequence_parallel splits each micro-batch's {} × {} = {} token rows over "
                       "strategy.tp {}; they do not divide (change batch.micro, micro-batches or seq_len)",
                       p.micro_batch, p.seq_len, p.micro_batch * p.seq_len, s.tp);
  return std::nullopt;
}

// strategy.stages as given: pp·interleave positive entries that add up to the model's units.
void check_stage_list(const TrainConfig& c, i64 units) {
  const StrategySpec& s = c.strategy;
  if (s.interleave > 1)
    SB_USER_CHECK(static_cast<i64>(s.stages.size()) == s.pp * s.interleave,
                  "{}: strategy.stages lists {} stages but strategy.pp {} × strategy.interleave {} needs {} (one "
                  "per model chunk, in model order)", c.source, s.stages.size(), s.pp, s.interleave,
                  s.pp * s.interleave);
  SB_USER_CHECK(static_cast<i64>(s.stages.size()) == s.pp * s.interleave,
                "{}: strategy.stages lists {} stages but strategy.pp is {}", c.source, s.stages.size(), s.pp);
  for (const i64 n : s.stages)
    SB_USER_CHECK(n >= 1, "{}: strategy.stages gives a stage {} layers; each stage needs at least one", c.source, n);
  const i64 sum = std::accumulate(s.stages.begin(), s.stages.end(), i64{0});
  SB_USER_CHECK(sum == units, "{}: strategy.stages adds up to {} but model {} has {} {}", c.source, sum, c.model.name,
                units, trains_resnet(c) ? "layers (stem, blocks and head)" : "blocks");
}

std::vector<i64> even_stage_sizes(i64 units, i64 pp) {
  std::vector<i64> sizes(static_cast<std::size_t>(pp), units / pp);
  for (i64 i = 0; i < units % pp; ++i) sizes[static_cast<std::size_t>(i)] += 1;
  return sizes;
}

// Forward FLOPs of each pipeline unit for one micro-batch: GPT blocks (the head's logits and
// loss on the last), or the ResNet's stem, blocks and head per image.
std::vector<double> unit_forward_flops(const TrainConfig& c, i64 micro_batch, i64 seq_len) {
  std::vector<double> costs;
  if (trains_resnet(c)) {
    for (const resnet::ResnetUnit& u : resnet::resnet_pipeline_units(resnet::resnet_config_by_name(c.model.name)))
      costs.push_back(u.forward_flops_per_image);
    return costs;
  }
  const gpt::GptConfig g = gpt_config_of(c);
  costs.assign(static_cast<std::size_t>(g.layers), gpt::gpt_block_forward_flops(g, micro_batch, seq_len));
  costs.back() += gpt::gpt_head_forward_flops(g, micro_batch, seq_len);
  return costs;
}

// balanced_contiguous_partition (O(units² · chunks)) of the units' costs, its recent answers kept
// per thread: plan asks the same split of every precision, ZeRO stage, recomputation, schedule
// and tp layout of a micro-batch size.
std::vector<i64> balanced_stage_sizes(const std::vector<double>& costs, i64 chunks) {
  struct Split {
    std::vector<double> costs;
    i64 chunks;
    std::vector<i64> sizes;
  };
  constexpr std::size_t kKept = 16;
  thread_local std::vector<Split> recent;  // the most recent first
  for (const Split& split : recent)
    if (split.chunks == chunks && split.costs == costs) return split.sizes;
  std::vector<i64> sizes = balanced_contiguous_partition(costs, static_cast<int>(chunks));
  if (recent.size() == kKept) recent.pop_back();
  recent.insert(recent.begin(), Split{costs, chunks, sizes});
  return sizes;
}

// Model chunk i is local chunk i / pp of rank i mod pp; it holds what that chunk has in flight.
std::vector<StagePlan> stage_plans_of(const RunPlan& p) {
  std::vector<std::vector<i64>> peaks;  // [rank][local chunk]
  for (int rank = 0; rank < static_cast<int>(p.pp); ++rank)
    peaks.push_back(pipeline_chunk_peaks_in_flight(p.schedule, static_cast<int>(p.pp), rank, p.micro_batches,
                                                   p.interleave));
  std::vector<StagePlan> plans;
  i64 begin = 0;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const auto chunk = static_cast<std::size_t>(static_cast<i64>(i) / p.pp);
    const auto rank = static_cast<std::size_t>(static_cast<i64>(i) % p.pp);
    plans.push_back({begin, begin + p.stages[i], p.pp == 1 ? 1 : peaks[rank][chunk]});
    begin += p.stages[i];
  }
  return plans;
}

}  // namespace

std::int64_t pipeline_units_of(const TrainConfig& c) {
  if (trains_resnet(c)) {
    const resnet::ResnetConfig r = resnet::resnet_config_by_name(c.model.name);
    return 2 + std::accumulate(r.stage_blocks.begin(), r.stage_blocks.end(), std::int64_t{0});
  }
  return gpt_config_of(c).layers;
}

bool trains_resnet(const TrainConfig& c) { return c.model.name.rfind("resnet", 0) == 0 && c.model.layers == 0; }

gpt::GptConfig gpt_config_of(const TrainConfig& c) {
  if (c.model.layers == 0) return gpt::gpt_config_by_name(c.model.name);
  gpt::GptConfig g;
  g.name = c.model.name;
  g.layers = c.model.layers;
  g.channels = c.model.hidden;
  g.heads = c.model.heads;
  g.max_seq_len = c.model.seq_len;
  g.vocab = c.model.vocab;
  return g;
}

std::int64_t gpt_seq_len(const TrainConfig& c) { return c.seq_len > 0 ? c.seq_len : gpt_config_of(c).max_seq_len; }

std::vector<std::int64_t> stage_sizes_of(const TrainConfig& c, std::int64_t micro_batch, std::int64_t seq_len) {
  const StrategySpec& s = c.strategy;
  const i64 units = pipeline_units_of(c);
  if (!s.stages.empty()) {
    check_stage_list(c, units);
    return s.stages;
  }
  const i64 chunks = s.pp * s.interleave;
  if (s.stage_rule == "even") return even_stage_sizes(units, chunks);
  return balanced_stage_sizes(unit_forward_flops(c, micro_batch, seq_len), chunks);
}

RunPlan resolve_run_plan(const TrainConfig& c, std::int64_t world_size) {
  const StrategySpec& s = c.strategy;
  RunPlan p;
  p.resnet = trains_resnet(c);
  p.dp = s.dp;
  p.tp = s.tp;
  p.pp = s.pp;
  p.interleave = s.interleave;
  p.world_size = world_size > 0 ? world_size : s.world_size();
  p.global_batch = c.global_batch;
  p.schedule = pipeline_schedule_from_string(s.schedule);
  p.units = pipeline_units_of(c);
  p.seq_len = p.resnet ? 0 : gpt_seq_len(c);
  p.stage_rule = s.stages.empty() ? s.stage_rule : "list";
  if (!s.stages.empty() && s.pp * s.interleave <= p.units) check_stage_list(c, p.units);
  SB_USER_CHECK(!s.recompute_early_stop || s.recompute == "full",
                "{}: strategy.recompute_early_stop stops a block's recomputed forward early; it needs strategy.recompute "
                "full (got {})", c.source, s.recompute);
  SB_USER_CHECK(!p.resnet || s.recompute != "selective",
                "{}: strategy.recompute selective recomputes attention, which model {} (a ResNet) has none of; use "
                "recompute none or full", c.source, c.model.name);
  SB_USER_CHECK(!s.p2p_overlap || s.pp > 1,
                "{}: strategy.p2p_overlap overlaps the pipeline's sends and receives with compute; it needs "
                "strategy.pp > 1 (got 1)", c.source);
  if (s.world_size() != p.world_size)
    return refused(std::move(p), Refusal::devices,
                   fmt::format("dp × tp × pp = {} × {} × {} = {} ranks, but {} devices were given", s.dp, s.tp, s.pp,
                               s.world_size(), p.world_size));
  if (const auto grid = grid_refusal(c, p.units)) return refused(std::move(p), grid->first, grid->second);
  if (const auto batch = batch_refusal(c, p)) return refused(std::move(p), Refusal::batch_split, *batch);
  if (const auto why = interleave_refusal(c, p.micro_batches)) return refused(std::move(p), Refusal::interleave, *why);
  if (const auto why = sequence_parallel_refusal(c, p))
    return refused(std::move(p), Refusal::sequence_parallel, *why);
  p.stages = stage_sizes_of(c, p.micro_batch, p.seq_len);
  p.stage_plans = stage_plans_of(p);
  p.feasible = true;
  return p;
}

RunPlan runnable_plan(const TrainConfig& c, std::int64_t world_size) {
  RunPlan p = resolve_run_plan(c, world_size);
  SB_USER_CHECK(p.feasible, "{}: {}", c.source, p.reason);
  return p;
}

}  // namespace sb::plan
