// SPDX-License-Identifier: Apache-2.0
// Site lookup and the stored form of a run's prediction.
#include "costmodel/run_prediction.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/check.hpp"
#include "core/cpu_identity.hpp"
#include "costmodel/prediction_band.hpp"

namespace sb::costmodel {

std::string site_of(const plan::TrainConfig& config) {
  if (!config.site.empty()) return config.site;
  return config.device == "cpu" ? "this-machine" : "";
}

io::Attributes prediction_attributes(const Prediction& p, const SiteProfile& site) {
  io::Attributes a = {{"site", site.name},
                      {"site_file", site.source},
                      {"device", site.device},
                      {"calibrated", std::int64_t{p.calibrated}},
                      {"kernel_timed", std::int64_t{p.kernel_timed}},
                      {"calibrated_cpu", site.calibrated_cpu},
                      {"devices_per_rank", p.devices_per_rank},
                      {"feasible", std::int64_t{p.feasible}},
                      {"reason", p.reason}};
  if (p.plan.feasible) {  // the plan predicted: the run's own attributes say what it trained
    a.emplace_back("stages", p.plan.stages);
    a.emplace_back("micro_batches", p.plan.micro_batches);
    a.emplace_back("micro_batch", p.plan.micro_batch);
  }
  if (!p.feasible) return a;
  const io::Attributes numbers = {
      {"step_time_s", p.step_time_s},
      {"compute_s", p.compute_s},
      {"comm_s", p.comm_s},
      {"tp_comm_s", p.tp_comm_s},
      {"p2p_s", p.p2p_s},
      {"dp_comm_s", p.dp_comm_s},
      {"bubble_s", p.bubble_s},
      {"optimizer_s", p.optimizer_s},
      {p.gpt ? "tokens_per_s" : "samples_per_s", p.gpt ? p.tokens_per_s : p.samples_per_s},
      {"tflops_per_device", p.tflops_per_device},
      {"mfu", p.mfu},
      {"hfu", p.hfu},
      {"mfu_convention", std::string(kMfuConvention)},
      {"peak_flops", p.peak_flops},
      {"peak_flops_precision", p.precision},
      {"peak_flops_source", p.peak_flops_source},
      {"tp_algorithm", p.tp_algorithm},
      {"dp_algorithm", p.dp_algorithm},
      {"nodes", std::int64_t{p.nodes}},
      {"ranks_per_node", std::int64_t{p.ranks_per_node}},
      {"placement", std::string(p.placement_observed ? "observed" : "site")},
      {"tp_link", p.tp_link},
      {"dp_link", p.dp_link},
      {"pp_link", p.pp_link},
      {"memory_params", p.memory.params},
      {"memory_grads", p.memory.grads},
      {"memory_optimizer", p.memory.optimizer},
      {"memory_activations", p.memory.activations},
      {"memory_comm", p.memory.comm},
      {"memory_total", p.memory.total()}};
  a.insert(a.end(), numbers.begin(), numbers.end());
  if (p.cost_per_hour > 0) {  // the site's price × devices, per hour; absent when the site gives none
    a.emplace_back("cost_per_hour", p.cost_per_hour);
    a.emplace_back("currency", p.currency);
  }
  // per pipeline stage (pp rank) as the memory table has them, bytes
  const auto per_stage = [&](double RankMemory::*part) {
    std::vector<std::int64_t> bytes;
    for (const RankMemory& m : p.rank_memory) bytes.push_back(std::llround(m.*part));
    return bytes;
  };
  a.emplace_back("stage_memory_params", per_stage(&RankMemory::params));
  a.emplace_back("stage_memory_grads", per_stage(&RankMemory::grads));
  a.emplace_back("stage_memory_optimizer", per_stage(&RankMemory::optimizer));
  a.emplace_back("stage_memory_activations", per_stage(&RankMemory::activations));
  a.emplace_back("stage_memory_comm", per_stage(&RankMemory::comm));
  return a;
}

std::string calibrated_elsewhere(const plan::TrainConfig& config, const SiteProfile& site, const Prediction& p,
                                 const std::string& this_cpu) {
  if (config.device != "cpu" || !p.kernel_timed || site.calibrated_cpu.empty() || site.calibrated_cpu == this_cpu)
    return "";
  return fmt::format("site '{}' ({}) was calibrated on {}, and this run is on {}: its prediction times another "
                     "CPU's kernels (run `scalebench calibrate --site {} --out SITE.yaml` here, then set site: SITE.yaml)",
                     site.name, site.source, site.calibrated_cpu, this_cpu, site.name);
}

plan::RunPrediction predict_run(const plan::TrainConfig& config, const RankPlacement* placement) {
  plan::RunPrediction run;
  const std::string site_name = site_of(config);
  if (site_name.empty()) {
    run.attributes = {{"feasible", std::int64_t{0}},
                      {"reason", std::string("no site profile: device cuda has no default; set the "
                                             "config key 'site' (a name in jobs/sites or a path)")}};
    return run;
  }
  const SiteProfile site = load_site_profile(site_profile_path(site_name, config.source + ": site"));
  Prediction p;
  try {
    p = predict_step(config, site, 0, placement);
  } catch (const UserError& e) {  // a case the trainer runs but the cost model does not model
    p.feasible = false;
    p.reason = fmt::format("the cost model does not model this case: {}", e.what());
  }
  run.attributes = prediction_attributes(p, site);
  if (p.feasible) {
    // the step time's band from the shipped validation rows on the site's device, when any
    if (const std::optional<PredictionBand> band = prediction_band(site, p.step_time_s)) {
      run.attributes.emplace_back("band_step_time_low_s", band->low_s);
      run.attributes.emplace_back("band_step_time_high_s", band->high_s);
      run.attributes.emplace_back("band_rows", std::int64_t{band->rows});
      run.attributes.emplace_back("band_method", band->method);
      run.band_step_time_s = std::make_pair(band->low_s, band->high_s);
    }
  }
  run.feasible = p.feasible;
  run.step_time_s = p.step_time_s;
  run.memory = {p.memory.params, p.memory.grads, p.memory.optimizer, p.memory.activations};
  run.peak_flops_per_rank = site.peak(config.precision.dtype) * p.devices_per_rank;
  run.peak_flops_source = fmt::format("{} ({}: peak_flops.{}, dense)",
                                      site.peak_flops_source.empty() ? "no peak_flops_source given" : site.peak_flops_source,
                                      site.source, config.precision.dtype);
  run.mfu_convention = kMfuConvention;
  run.warning = calibrated_elsewhere(config, site, p, cpu_identity());
  return run;
}

}  // namespace sb::costmodel
