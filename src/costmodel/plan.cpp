// SPDX-License-Identifier: Apache-2.0
// plan_search: the enumeration, predict_step on each candidate, the ranking and the grouping of
// refusals. A refusal that belongs to the grid (tp beyond a node, tp not dividing the heads,
// pp not dividing the layers, a batch that does not split over dp) is decided once per grid
// and counted for each candidate of it. Leaves out the cost model itself (step_prediction).
#include "costmodel/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>
#include <optional>

#include "core/check.hpp"
#include "core/heap_reuse.hpp"
#include "costmodel/prediction_json.hpp"
#include "models/gpt/gpt_config.hpp"
#include "plan/run_plan.hpp"

namespace sb::costmodel {

namespace {

using i64 = std::int64_t;

std::vector<i64> divisors(i64 n) {
  std::vector<i64> out;
  for (i64 d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

const char* refusal_group(Refusal r) {
  switch (r) {
    case Refusal::none: return "refused";
    case Refusal::devices: return "grid does not match the device count";
    case Refusal::tp_beyond_node: return "tp beyond one node";
    case Refusal::tp_heads: return "tp does not divide the attention heads";
    case Refusal::pp_layers: return "pp beyond what the layers split into";
    case Refusal::batch_split: return "batch does not split";
    case Refusal::interleave: return "interleaving needs pp > 1, 1f1b and micro-batches in groups of pp";
    case Refusal::sequence_parallel: return "sequence parallelism needs a GPT, tp > 1 and token rows that split over tp";
    case Refusal::memory: return "too little memory";
  }
  return "refused";
}

const std::vector<std::string> kPrecisions{"bf16", "fp16", "fp32"};
const std::vector<std::string> kRecomputes{"none", "selective", "full"};

// The precisions a site is searched in: fp8 too where its GEMM model has a fitted fp8
// efficiency (gemm.e_max_fp8, which needs peak_flops.fp8) and the kernels are the device's own
// (compute capability 8.0 has no fp8).
std::vector<std::string> precisions_of(const SiteProfile& site, const PlanRequest& request) {
  std::vector<std::string> precisions = kPrecisions;
  if (site.gemm && site.gemm->e_max_fp8 && request.kernels == "native") precisions.push_back("fp8");
  return precisions;
}

// tp > 1 is searched without and with sequence parallelism run under the GEMMs (tp_overlap).
std::vector<bool> tp_layouts_of(i64 tp) { return tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false}; }

std::vector<std::string> schedules_of(i64 pp) {
  return pp > 1 ? std::vector<std::string>{"1f1b", "gpipe"} : std::vector<std::string>{"1f1b"};
}

// The virtual stages a 1f1b candidate is searched with besides none: every even split of a
// pipeline rank's layers into v > 1 chunks, where the step's micro-batches go in groups of pp
// (Megatron-LM's interleaved schedule, whose chunks hold equal layer counts: stage_rule even).
// Each runs with the pipeline's sends beside the compute
// (p2p_overlap), as NeMo runs every interleaved layout it publishes ("NeMo supports PP
// communication overlap only with virtual pipelining", docs/source/features/optimizations/
// communication_overlap.rst) and Megatron-Bridge turns it on whenever the pipeline is virtual.
std::vector<i64> interleaves_of(i64 layers, i64 pp, i64 micro_batches) {
  std::vector<i64> out;
  if (pp == 1 || layers % pp != 0 || micro_batches % pp != 0) return out;
  for (i64 v : divisors(layers / pp))
    if (v > 1) out.push_back(v);
  return out;
}

// ZeRO stages 0 to kMaxZero are searched; virtual stages with 0 to kMaxInterleavedZero (Megatron-
// LM's DistributedDataParallel, with or without its distributed optimizer).
constexpr i64 kMaxZero = 3, kMaxInterleavedZero = 1;

// The candidates a grid's micro-batch size stands for besides its precision and tp layout: per
// ZeRO stage and recomputation the schedules and, under 1f1b, the virtual stages.
i64 pipeline_layouts(i64 layers, i64 pp, i64 micro_batches) {
  const auto schedules = static_cast<i64>(schedules_of(pp).size());
  const auto interleaves = static_cast<i64>(interleaves_of(layers, pp, micro_batches).size());
  return static_cast<i64>(kRecomputes.size()) * ((kMaxZero + 1) * schedules + (kMaxInterleavedZero + 1) * interleaves);
}

// `plain`'s layout over v virtual stages, as NVIDIA's published runs take them: the sends beside
// the compute and, in 16 bits, the gradients kept and reduced in the 16-bit type; not predicted.
PlanCandidate with_virtual_stages(const PlanCandidate& plain, i64 v) {
  return {.dp = plain.dp, .tp = plain.tp, .pp = plain.pp, .micro_batch = plain.micro_batch, .zero = plain.zero,
          .precision = plain.precision, .recompute = plain.recompute, .schedule = plain.schedule,
          .tp_overlap = plain.tp_overlap, .interleave = v, .p2p_overlap = true,
          .main_grads = plain.precision == "fp32" ? "fp32" : "storage"};
}

// The refusal that every candidate of a dp × tp × pp grid shares, if any: tp beyond a node
// (the site), a pp the layers do not split into (below), and what the grid's plan refuses (tp
// and the heads, more stages than layers, the batch over dp).
// A pp that does not divide the layers is searched up to half of them: its stages split them by
// the plan's balanced rule, as Llama 3 405B's 126 layers ran on 16 stages (Llama Team 2024,
// arXiv:2407.21783, Table 4) and torchtitan's on 8 (its virtual stages are not: interleaves_of).
// Beyond half, stages of one block wait on stages of two: the pace ceil(layers/2) stages already
// set with fewer devices a pipeline. The search leaves them out (they cost the most to simulate).
std::optional<std::pair<Refusal, std::string>> grid_refusal(const plan::TrainConfig& c, const gpt::GptConfig& g,
                                                            const SiteProfile& site) {
  const auto& s = c.strategy;
  if (s.tp > site.devices_per_node)
    return std::pair{Refusal::tp_beyond_node,
                     fmt::format("tp {} > {} devices per node of site '{}'", s.tp, site.devices_per_node, site.name)};
  if (g.layers % s.pp != 0 && 2 * s.pp > g.layers && s.pp <= g.layers)
    return std::pair{Refusal::pp_layers,
                     fmt::format("pp {} does not divide the {} layers of {} and leaves stages of one block waiting "
                                 "on stages of two", s.pp, g.layers, g.name)};
  plan::TrainConfig whole_batch = c;
  whole_batch.micro_batch = 0;
  const plan::RunPlan run_plan = plan::resolve_run_plan(whole_batch);
  if (!run_plan.feasible) return std::pair{refusal_of(run_plan.refusal), run_plan.reason};
  return std::nullopt;
}

// What one dp × tp × pp grid gives: its feasible candidates and its refused ones (each with the
// count it stands for), in the order the search visits them.
struct GridOutcome {
  std::vector<PlanCandidate> feasible;
  std::vector<std::pair<PlanCandidate, i64>> refused;
  std::exception_ptr error;  // a prediction's exception, raised again when the grids are merged
};

// Each micro-batch size, precision, ZeRO stage, recomputation, schedule (and virtual stages)
// and tp layout of one grid. Virtual stages are Megatron-LM's schedule, searched as Megatron-LM
// runs it: with its DistributedDataParallel, with or without the distributed optimizer (ZeRO 0
// and 1; it shards neither gradients nor parameters). A 1f1b candidate refused for anything but
// memory stands for its interleaved ones, which the same rule refuses; memory is predicted for
// each (their even split can put fewer layers on the first rank than the balanced 1f1b split
// does, see the test Plan.InterleavedLayoutsCanNeedLessMemoryThanTheirOneFOneB), and refused
// before any step is simulated.
void search_grid(const plan::TrainConfig& grid, const gpt::GptConfig& g, const SiteProfile& site,
                 const std::vector<std::string>& precisions, int devices, GridOutcome& out) {
  const auto& s = grid.strategy;
  for (i64 micro : divisors(grid.global_batch / s.dp)) {
    const std::vector<i64> interleaves = interleaves_of(g.layers, s.pp, grid.global_batch / (s.dp * micro));
    for (const std::string& precision : precisions)
      for (i64 zero = 0; zero <= kMaxZero; ++zero)
        for (const std::string& recompute : kRecomputes)
          for (const std::string& schedule : schedules_of(s.pp))
            for (const bool tp_overlap : tp_layouts_of(s.tp)) {
              PlanCandidate cand{.dp = s.dp, .tp = s.tp, .pp = s.pp, .micro_batch = micro, .zero = zero,
                                 .precision = precision, .recompute = recompute, .schedule = schedule,
                                 .tp_overlap = tp_overlap};
              cand.prediction = predict_step(plan_candidate_config(grid, cand), site, devices);
              const bool interleavable = schedule == "1f1b" && zero <= kMaxInterleavedZero && !interleaves.empty();
              if (!cand.prediction.feasible && cand.prediction.refusal != Refusal::memory) {
                const i64 count = 1 + (interleavable ? static_cast<i64>(interleaves.size()) : 0);
                out.refused.emplace_back(std::move(cand), count);
                continue;
              }
              if (interleavable)
                for (i64 v : interleaves) {
                  PlanCandidate virtual_stages = with_virtual_stages(cand, v);
                  virtual_stages.prediction = predict_step(plan_candidate_config(grid, virtual_stages), site, devices);
                  if (virtual_stages.prediction.feasible)
                    out.feasible.push_back(std::move(virtual_stages));
                  else
                    out.refused.emplace_back(std::move(virtual_stages), 1);
                }
              if (cand.prediction.feasible)
                out.feasible.push_back(std::move(cand));
              else
                out.refused.emplace_back(std::move(cand), 1);
            }
  }
}

}  // namespace

plan::TrainConfig plan_candidate_config(const plan::TrainConfig& grid, const PlanCandidate& candidate) {
  plan::TrainConfig c = grid;
  c.micro_batch = candidate.micro_batch;
  c.precision.dtype = candidate.precision;
  c.strategy.zero = candidate.zero;
  c.strategy.recompute = candidate.recompute;
  c.strategy.schedule = candidate.schedule;
  c.strategy.sequence_parallel = candidate.tp_overlap;
  c.strategy.tp_overlap = candidate.tp_overlap;
  c.strategy.interleave = candidate.interleave;
  c.strategy.p2p_overlap = candidate.p2p_overlap;
  c.precision.main_grads = candidate.main_grads;
  if (candidate.interleave > 1) c.strategy.stage_rule = "even";  // Megatron-LM's virtual stages split evenly
  return c;
}

plan::TrainConfig plan_grid_config(const PlanRequest& request, std::int64_t seq_len, std::int64_t dp,
                                   std::int64_t tp, std::int64_t pp) {
  plan::TrainConfig c;
  c.source = "plan";
  c.model.name = request.model;
  c.data.dataset = "sotu";
  c.seq_len = seq_len;
  c.global_batch = request.global_batch;
  c.strategy.dp = dp;
  c.strategy.tp = tp;
  c.strategy.pp = pp;
  c.model.attention = request.attention;
  c.model.kernels = request.kernels;
  return c;
}

PlanResult plan_search(const PlanRequest& request, const SiteProfile& site) {
  const gpt::GptConfig g = gpt::gpt_config_by_name(request.model);
  SB_USER_CHECK(request.devices >= 1, "plan: --devices must be positive, got {}", request.devices);
  SB_USER_CHECK(request.global_batch >= 1, "plan: --global-batch must be positive, got {}", request.global_batch);
  SB_USER_CHECK(request.attention == "unfused" || request.attention == "flash",
                "plan: --attention is '{}'; it must be unfused or flash", request.attention);
  SB_USER_CHECK(request.kernels == "native" || request.kernels == "sm80",
                "plan: --kernels is '{}'; it must be native or sm80", request.kernels);
  SB_USER_CHECK(request.kernels == "native" || (site.gemm && site.gemm->sm80),
                "plan: --kernels sm80 needs the site's 'gemm.e_max_sm80' (the efficiency of compute capability "
                "8.0's kernels on the device), which {} ({}) does not give", site.name, site.source);
  const i64 seq = request.seq_len > 0 ? request.seq_len : g.max_seq_len;
  SB_USER_CHECK(seq <= g.max_seq_len, "plan: --seq-len {} exceeds the {} positions of {}", seq, g.max_seq_len,
                g.name);

  PlanResult result;
  result.seq_len = seq;
  std::map<Refusal, PlanRejection> groups;
  const auto reject = [&](const PlanCandidate& c, i64 count) {
    PlanRejection& group = groups[c.prediction.refusal];
    if (group.count == 0 ||
        (c.prediction.refusal == Refusal::memory &&
         c.prediction.memory.total() < group.example.prediction.memory.total()))
      group.example = c;
    group.count += count;
    result.candidates += count;
  };

  const i64 N = request.devices;
  const std::vector<std::string> precisions = precisions_of(site, request);
  std::vector<std::pair<i64, i64>> grids;  // (tp, pp)
  for (i64 tp : divisors(N))
    for (i64 pp : divisors(N / tp)) grids.emplace_back(tp, pp);
  // the grids are independent: searched on the OpenMP threads, merged in this order (so the
  // answer is the serial one)
  std::vector<GridOutcome> outcomes(grids.size());
  keep_freed_heap_for_reuse();  // each candidate's prediction allocates and frees its simulation's few MiB
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t i = 0; i < grids.size(); ++i) {
    GridOutcome& out = outcomes[i];
    try {
      const auto [tp, pp] = grids[i];
      const plan::TrainConfig grid = plan_grid_config(request, seq, N / (tp * pp), tp, pp);
      if (const auto refusal = grid_refusal(grid, g, site)) {
        // counted for each candidate of the grid: its micro-batch sizes (1 when the batch
        // does not split) times the other choices
        PlanCandidate base{.dp = grid.strategy.dp, .tp = tp, .pp = pp, .micro_batch = 1, .zero = 0,
                           .precision = kPrecisions[0], .recompute = kRecomputes[0], .schedule = "1f1b"};
        base.prediction.model = g.name;
        base.prediction.refusal = refusal->first;
        base.prediction.reason = refusal->second;
        // counted for each candidate of the grid: per micro-batch size its ZeRO stages,
        // recomputations and pipeline layouts, times the other choices (the micro-batch counts a
        // step takes are the divisors of the rank's batch, as its sizes are; one of one
        // micro-batch when the batch does not split)
        const i64 dp = grid.strategy.dp;
        const std::vector<i64> micro_batch_counts =
            request.global_batch % dp == 0 ? divisors(request.global_batch / dp) : std::vector<i64>{1};
        i64 layouts = 0;
        for (i64 micro_batches : micro_batch_counts) layouts += pipeline_layouts(g.layers, pp, micro_batches);
        out.refused.emplace_back(std::move(base), layouts * static_cast<i64>(precisions.size() * tp_layouts_of(tp).size()));
        continue;
      }
      search_grid(grid, g, site, precisions, static_cast<int>(N), out);
    } catch (...) {
      out.error = std::current_exception();
    }
  }
  for (GridOutcome& out : outcomes) {
    if (out.error) std::rethrow_exception(out.error);
    for (auto& [cand, count] : out.refused) reject(cand, count);
    for (PlanCandidate& cand : out.feasible) {
      result.feasible.push_back(std::move(cand));
      ++result.candidates;
    }
  }

  std::stable_sort(result.feasible.begin(), result.feasible.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.prediction.step_time_s != b.prediction.step_time_s) return a.prediction.step_time_s < b.prediction.step_time_s;
    return a.prediction.memory.total() < b.prediction.memory.total();
  });
  for (auto& [kind, group] : groups) {
    group.reason = refusal_group(kind);
    result.rejected.push_back(std::move(group));
  }
  std::stable_sort(result.rejected.begin(), result.rejected.end(),
                   [](const PlanRejection& a, const PlanRejection& b) { return a.count > b.count; });
  return result;
}

nlohmann::json plan_candidate_json(const PlanCandidate& c) {
  nlohmann::json j = prediction_json(c.prediction);
  j["dp"] = c.dp;
  j["tp"] = c.tp;
  j["pp"] = c.pp;
  j["micro_batch"] = c.micro_batch;
  j["micro_batches"] = c.prediction.feasible ? nlohmann::json(c.prediction.micro_batches) : nlohmann::json(nullptr);
  j["precision"] = c.precision;
  j["zero"] = c.zero;
  j["recompute"] = c.recompute;
  j["schedule"] = c.schedule;
  j["sequence_parallel"] = c.tp_overlap;
  j["tp_overlap"] = c.tp_overlap;
  j["interleave"] = c.interleave;
  j["p2p_overlap"] = c.p2p_overlap;
  j["main_grads"] = c.main_grads;
  return j;
}

nlohmann::json plan_json(const PlanRequest& request, const SiteProfile& site, const PlanResult& result, int top) {
  nlohmann::json j;
  j["model"] = request.model;
  j["site"] = site.name;
  j["devices"] = request.devices;
  j["global_batch"] = request.global_batch;
  j["seq_len"] = result.seq_len;
  j["attention"] = request.attention;
  j["kernels"] = request.kernels;
  j["candidates"] = result.candidates;
  j["feasible_count"] = result.feasible.size();
  j["feasible"] = nlohmann::json::array();
  for (std::size_t i = 0; i < result.feasible.size() && static_cast<int>(i) < top; ++i)
    j["feasible"].push_back(plan_candidate_json(result.feasible[i]));
  j["rejected"] = nlohmann::json::array();
  for (const PlanRejection& r : result.rejected)
    j["rejected"].push_back({{"reason", r.reason}, {"count", r.count}, {"example", plan_candidate_json(r.example)}});
  return j;
}

}  // namespace sb::costmodel
