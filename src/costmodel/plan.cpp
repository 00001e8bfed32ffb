// plan_search: the enumeration, predict_step on each candidate, the ranking and the grouping of
// refusals. A refusal that belongs to the grid (tp beyond a node, tp not dividing the heads,
// pp not dividing the layers, a batch that does not split over dp) is decided once per grid
// and counted for each candidate of it. Leaves out the cost model itself (step_prediction).
#include "costmodel/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/check.hpp"
#include "costmodel/prediction_json.hpp"
#include "models/gpt/gpt_config.hpp"

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
    case Refusal::pp_layers: return "pp does not divide the layers";
    case Refusal::batch_split: return "batch does not split";
    case Refusal::memory: return "too little memory";
  }
  return "refused";
}

const std::vector<std::string> kPrecisions{"bf16", "fp16", "fp32"};
const std::vector<std::string> kRecomputes{"none", "selective", "full"};

}  // namespace

PlanResult plan_search(const PlanRequest& request, const SiteProfile& site) {
  const gpt::GptConfig g = gpt::gpt_config_by_name(request.model);
  SB_USER_CHECK(request.devices >= 1, "plan: --devices must be positive, got {}", request.devices);
  SB_USER_CHECK(request.global_batch >= 1, "plan: --global-batch must be positive, got {}", request.global_batch);
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
  for (i64 tp : divisors(N)) {
    for (i64 pp : divisors(N / tp)) {
      const i64 dp = N / (tp * pp);
      const std::vector<std::string> schedules =
          pp > 1 ? std::vector<std::string>{"1f1b", "gpipe"} : std::vector<std::string>{"1f1b"};
      const i64 variants = static_cast<i64>(kPrecisions.size() * 4 * kRecomputes.size() * schedules.size());
      PlanCandidate base;
      base.dp = dp;
      base.tp = tp;
      base.pp = pp;
      base.precision = kPrecisions[0];
      base.recompute = kRecomputes[0];
      base.schedule = schedules[0];
      const std::vector<i64> micro_batches =
          request.global_batch % dp == 0 ? divisors(request.global_batch / dp) : std::vector<i64>{1};

      train::TrainConfig c;
      c.source = "plan";
      c.model.name = g.name;
      c.data.dataset = "sotu";
      c.seq_len = seq;
      c.global_batch = request.global_batch;
      c.strategy.dp = dp;
      c.strategy.tp = tp;
      c.strategy.pp = pp;

      // grid-level refusals, once per grid, counted for each of its candidates
      const auto grid_refusal = [&](Refusal kind, std::string reason) {
        base.prediction = Prediction{};
        base.prediction.model = g.name;
        base.prediction.refusal = kind;
        base.prediction.reason = std::move(reason);
        reject(base, variants * static_cast<i64>(micro_batches.size()));
      };
      if (tp > site.devices_per_node) {
        grid_refusal(Refusal::tp_beyond_node,
                     fmt::format("tp {} > {} devices per node of site '{}'", tp, site.devices_per_node, site.name));
        continue;
      }
      if (g.heads % tp != 0) {
        grid_refusal(Refusal::tp_heads, fmt::format("tp {} does not divide the {} heads of {}", tp, g.heads, g.name));
        continue;
      }
      if (g.layers % pp != 0) {
        grid_refusal(Refusal::pp_layers, fmt::format("pp {} does not divide the {} layers of {}", pp, g.layers, g.name));
        continue;
      }
      if (request.global_batch % dp != 0) {
        grid_refusal(Refusal::batch_split, fmt::format("global batch {} does not split over dp {}",
                                                       request.global_batch, dp));
        continue;
      }

      for (i64 micro : micro_batches) {
        c.micro_batch = micro;
        for (const std::string& precision : kPrecisions) {
          c.precision.dtype = precision;
          for (i64 zero = 0; zero <= 3; ++zero) {
            c.strategy.zero = zero;
            for (const std::string& recompute : kRecomputes) {
              c.strategy.recompute = recompute;
              for (const std::string& schedule : schedules) {
                c.strategy.schedule = schedule;
                PlanCandidate cand{dp, tp, pp, micro, zero, precision, recompute, schedule, {}};
                cand.prediction = predict_step(c, site, static_cast<int>(N));
                if (cand.prediction.feasible) {
                  result.feasible.push_back(std::move(cand));
                  ++result.candidates;
                } else {
                  reject(cand, 1);
                }
              }
            }
          }
        }
      }
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
  return j;
}

nlohmann::json plan_json(const PlanRequest& request, const SiteProfile& site, const PlanResult& result, int top) {
  nlohmann::json j;
  j["model"] = request.model;
  j["site"] = site.name;
  j["devices"] = request.devices;
  j["global_batch"] = request.global_batch;
  j["seq_len"] = result.seq_len;
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
