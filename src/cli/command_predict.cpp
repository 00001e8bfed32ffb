// SPDX-License-Identifier: Apache-2.0
// `scalebench predict --config CASE.yaml --site SITE.yaml [--devices N] [--set k=v]... [--json]`:
// the cost model's prediction of one training step; `scalebench predict --validate SET.yaml
// [--json]`: every published run of a validation set replayed, with its errors (exit 0: it
// reports, it does not judge); `scalebench predict --fit SET[,SET] [--write-site PATH] [--json]`:
// the GEMM model's e_max per device fitted on the sets' rows (nothing written unless
// --write-site); `scalebench predict --cross-validate SET,SET[,...] [--json]`: each set replayed
// on the constants fitted on the others. Leaves out the model (src/costmodel).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "core/check.hpp"
#include "costmodel/predict_case.hpp"
#include "costmodel/prediction_band.hpp"
#include "costmodel/prediction_json.hpp"
#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel/validation_set.hpp"
#include "train/trainer.hpp"

namespace sb::cli {

namespace {

struct PredictOptions {
  std::string config, site, validate, fit, write_site, cross_validate;
  std::vector<std::string> overrides;
  int devices = 0;
  bool json = false;
};

std::string human_summary(const costmodel::Prediction& p, const costmodel::SiteProfile& site) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  std::string out = fmt::format("{} on {} × {} (site {}), dp {} tp {} pp {}", p.model, p.devices,
                                site.device, site.name, p.dp, p.tp, p.pp);
  if (p.micro_batch > 0) out += fmt::format(", {} micro-batches of {}", p.micro_batches, p.micro_batch);
  if (p.plan.feasible && p.pp > 1)
    out += fmt::format(", stages [{}] ({})", fmt::join(p.plan.stages, ", "), p.plan.stage_rule);
  out += fmt::format(", {}{}\n", p.precision, p.kernels == "native" ? "" : fmt::format(", {} kernels", p.kernels));
  if (!p.feasible) return out + fmt::format("infeasible: {}\n", p.reason);
  out += fmt::format("step time     {:10.4f} s  (event simulation; the parts below are the last rank's, "
                     "on pipeline stage {})\n", p.step_time_s, p.critical_stage);
  if (p.kernel_timed)
    out += fmt::format("  compute     {:10.4f} s  (the trainer's kernel calls, timed by calibrate on {}{})\n", p.compute_s,
                       site.name, site.calibrated_cpu.empty() ? "" : ": " + site.calibrated_cpu);
  else
    out += fmt::format("  compute     {:10.4f} s  ({:.3g} TFLOP/s peak × efficiency {:.3f}{})\n", p.compute_s,
                       p.peak_flops / 1e12, p.gemm_efficiency,
                       p.calibrated ? ""
                                    : ", not calibrated: the datasheet peak, an upper bound on speed; give the site "
                                      "a gemm: model (jobs/README.md) or run calibrate");
  out += fmt::format("  comm        {:10.4f} s  (tp {:.4f}, p2p {:.4f}, dp exposed {:.4f}){}\n", p.comm_s,
                     p.tp_comm_s, p.p2p_s, p.dp_comm_s,
                     p.tp_algorithm.empty() && p.dp_algorithm.empty()
                         ? std::string()
                         : fmt::format("; NCCL tp {}, dp bucket {}", p.tp_algorithm.empty() ? "-" : p.tp_algorithm,
                                       p.dp_algorithm.empty() ? "-" : p.dp_algorithm));
  out += fmt::format("  links       {} node(s) of {} rank(s): tp {}, dp {}, pp {}\n", p.nodes, p.ranks_per_node,
                     p.tp_link, p.dp_link, p.pp_link);
  out += fmt::format("  bubble      {:10.4f} s\n", p.bubble_s);
  out += fmt::format("  optimizer   {:10.4f} s\n", p.optimizer_s);
  if (p.gpt) out += fmt::format("throughput    {:10.4g} tokens/s\n", p.tokens_per_s);
  else out += fmt::format("throughput    {:10.4g} samples/s\n", p.samples_per_s);
  out += fmt::format("TFLOP/s/device {:9.2f}   MFU {:.1f}%   HFU {:.1f}%\n", p.tflops_per_device, 100.0 * p.mfu,
                     100.0 * p.hfu);
  out += fmt::format("  peak        {:.4g} TFLOP/s {} dense: {}\n  convention  {}\n", p.peak_flops / 1e12, p.precision,
                     p.peak_flops_source, costmodel::kMfuConvention);
  out += fmt::format("memory/rank   params {:.2f}, grads {:.2f}, optimizer {:.2f}, activations {:.2f}, comm {:.2f}, "
                     "total {:.2f} of {:.1f} GiB\n", p.memory.params / GiB, p.memory.grads / GiB,
                     p.memory.optimizer / GiB, p.memory.activations / GiB, p.memory.comm / GiB, p.memory.total() / GiB,
                     p.memory_available / GiB);
  if (p.cost_per_hour > 0)
    out += fmt::format("cost          {:.2f} {} per hour ({} devices × {:.2f} {})\n", p.cost_per_hour, p.currency,
                       p.devices, site.price_per_device_hour.value_or(0.0), p.currency);
  return out;
}

// The sets --fit names and their fits.
struct Fitted {
  std::string names;  // "SET version N, ..."
  std::vector<costmodel::EmaxFit> fits;
};
// The sets a comma-separated list names (names or files), read and checked.
std::vector<costmodel::ValidationSet> load_sets(const std::string& list_text, const char* option) {
  std::vector<costmodel::ValidationSet> sets;
  std::stringstream list(list_text);
  for (std::string item; std::getline(list, item, ',');) {
    SB_USER_CHECK(!item.empty(), "{} '{}': an empty set name between commas", option, list_text);
    sets.push_back(costmodel::load_validation_set(costmodel::validation_set_path(item)));
  }
  return sets;
}

// "SET version N, ...": the sets as a fit's provenance names them.
std::string set_names(const std::vector<std::string>& named) { return fmt::format("{}", fmt::join(named, ", ")); }

Fitted fit_sets(const std::string& fit) {
  const std::vector<costmodel::ValidationSet> sets = load_sets(fit, "--fit");
  std::vector<std::string> named;
  for (const costmodel::ValidationSet& set : sets) named.push_back(costmodel::versioned_name(set));
  return {set_names(named), costmodel::fit_gemm_e_max(sets)};
}

nlohmann::json fits_json(const Fitted& fitted) {
  const auto finite = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j{{"sets", fitted.names}, {"fits", nlohmann::json::array()}};
  for (const costmodel::EmaxFit& f : fitted.fits)
    j["fits"].push_back({{"device", f.device}, {"site", f.site}, {"site_file", f.site_file}, {"key", f.key},
                         {"shipped_e_max", finite(f.shipped_e_max)}, {"e_max", f.e_max},
                         {"shipped_k_overhead", f.shipped_k_overhead}, {"k_overhead", f.k_overhead},
                         {"k_overhead_fitted", f.k_overhead_fitted},
                         {"shipped_e_attention", f.shipped_e_attention ? nlohmann::json(*f.shipped_e_attention)
                                                                       : nlohmann::json(nullptr)},
                         {"e_attention", finite(f.e_attention)}, {"e_attention_fitted", f.e_attention_fitted},
                         {"rows", f.rows},
                         {"infeasible", f.infeasible},
                         {"shipped_mean_abs_error_pct", finite(f.shipped_mean_abs_error_pct)},
                         {"mean_abs_error_pct", f.mean_abs_error_pct}, {"max_abs_error_pct", f.max_abs_error_pct}});
  return j;
}

std::string fits_table(const Fitted& fitted) {
  std::string out = fmt::format(
      "GEMM e_max fitted on {} (per row the mean |error| of its figures, parameters and memory left out)\n", fitted.names);
  for (const costmodel::EmaxFit& f : fitted.fits) {
    const bool shipped = std::isfinite(f.shipped_e_max);
    const std::string k = f.k_overhead_fitted
                              ? fmt::format(", k_overhead {:.0f} (profile {:.0f})", f.k_overhead, f.shipped_k_overhead)
                              : fmt::format(", k_overhead {:.0f} (the profile's, kept)", f.k_overhead);
    const std::string shipped_attention =
        f.shipped_e_attention ? fmt::format("{:.4f}", *f.shipped_e_attention) : std::string("none: e_max");
    const std::string attention =
        f.e_attention_fitted ? fmt::format(", e_attention {:.4f} (profile {})", f.e_attention, shipped_attention)
                             : fmt::format(", e_attention {} (the profile's, kept)", shipped_attention);
    out += fmt::format("{:<24} site {:<20} {} {:.4f} (profile {}){}{}: {} rows{}, mean |error| {:.1f}% (profile's {}), "
                       "max {:.1f}%\n", f.device, f.site, f.key, f.e_max,
                       shipped ? fmt::format("{:.4f}", f.shipped_e_max) : "none", k, attention, f.rows,
                       f.infeasible ? fmt::format(" ({} infeasible left out)", f.infeasible) : std::string(),
                       f.mean_abs_error_pct, shipped ? fmt::format("{:.1f}%", f.shipped_mean_abs_error_pct) : "-",
                       f.max_abs_error_pct);
  }
  return out;
}

// --write-site: each fitted profile once, with all its fitted keys; an existing folder receives
// <site>.yaml for each (required for several), else PATH is the one copy.
void write_fitted_sites(const Fitted& fitted, const std::string& write_site) {
  std::vector<std::string> site_files;
  for (const costmodel::EmaxFit& f : fitted.fits)
    if (std::find(site_files.begin(), site_files.end(), f.site_file) == site_files.end())
      site_files.push_back(f.site_file);
  const bool folder = std::filesystem::is_directory(write_site);
  SB_USER_CHECK(folder || site_files.size() == 1,
                "--write-site {}: the sets' rows run on {} devices, so it must be an existing folder to write one "
                "profile per device into", write_site, site_files.size());
  for (const std::string& site_file : site_files) {
    std::ifstream in(site_file);
    SB_USER_CHECK(in.good(), "--write-site: cannot read the site profile {}", site_file);
    std::stringstream text;
    text << in.rdbuf();
    std::string written = text.str(), site;
    for (const costmodel::EmaxFit& f : fitted.fits) {
      if (f.site_file != site_file) continue;
      site = f.site;
      const std::string provenance = fmt::format("fitted by predict --fit on {}", fitted.names);
      written = costmodel::site_profile_with_e_max(written, f.site_file, f.e_max, provenance, f.key);
      const std::string suffix = costmodel::GemmModel::key_suffix(f.key);  // the sm80 kernels' own keys
      if (f.k_overhead_fitted)
        written = costmodel::site_profile_with_e_max(written, f.site_file, f.k_overhead, provenance,
                                                     "k_overhead" + suffix);
      if (f.e_attention_fitted)
        written = costmodel::site_profile_with_e_max(written, f.site_file, f.e_attention, provenance,
                                                     "e_attention" + suffix);
    }
    const std::filesystem::path path =
        folder ? std::filesystem::path(write_site) / (site + ".yaml") : std::filesystem::path(write_site);
    costmodel::parse_site_profile(YAML::Load(written), path.string());  // what is written loads
    std::ofstream out(path);
    out << written;
    SB_USER_CHECK(out.good(), "--write-site: cannot write {}", path.string());
    std::fprintf(stderr, "wrote %s\n", path.string().c_str());
  }
}

// --fit alone prints the fits; with --validate it replays that set on them (held out when the
// set is not among the fitted ones).
int run_fit(const PredictOptions& options) {
  const Fitted fitted = fit_sets(options.fit);
  if (!options.write_site.empty()) write_fitted_sites(fitted, options.write_site);
  if (options.validate.empty()) {
    std::fputs(options.json ? (fits_json(fitted).dump(2) + "\n").c_str() : fits_table(fitted).c_str(), stdout);
    return 0;
  }
  const costmodel::ValidationReplay replay = costmodel::replay_validation_set(
      costmodel::load_validation_set(costmodel::validation_set_path(options.validate)), fitted.fits);
  if (options.json) {
    nlohmann::json j = costmodel::validation_replay_json(replay);
    j["fitted_on"] = fits_json(fitted);
    std::puts(j.dump(2).c_str());
  } else {
    std::fputs((fits_table(fitted) + "\n" + costmodel::validation_replay_table(replay)).c_str(), stdout);
  }
  return 0;
}

// A replay's summary per site profile its rows ran on.
std::map<std::string, std::vector<costmodel::FigureSummary>> summaries_by_site(const costmodel::ValidationReplay& replay) {
  std::map<std::string, std::vector<costmodel::RowReplay>> rows;
  for (const costmodel::RowReplay& row : replay.rows) rows[row.site].push_back(row);
  std::map<std::string, std::vector<costmodel::FigureSummary>> out;
  for (const auto& [site, site_rows] : rows) out[site] = costmodel::summarize_figures(site_rows);
  return out;
}

// --cross-validate: each set left out of a fit on the others and replayed on it; per set its
// fits, its held-out rows' summary and the rows not held out, then one line per set and figure.
int run_cross_validate(const PredictOptions& options) {
  const std::vector<costmodel::ValidationSet> sets = load_sets(options.cross_validate, "--cross-validate");
  std::fprintf(stderr, "cross-validate: fitting %zu times, each on %zu of %zu sets\n", sets.size(), sets.size() - 1,
               sets.size());
  const std::vector<costmodel::HeldOutReplay> held = costmodel::leave_one_set_out(sets);
  if (options.json) {
    nlohmann::json j{{"sets", nlohmann::json::array()}, {"held_out", nlohmann::json::array()}};
    for (const costmodel::ValidationSet& set : sets) j["sets"].push_back(set.name);
    for (const costmodel::HeldOutReplay& h : held) {
      nlohmann::json one = costmodel::validation_replay_json(h.replay);
      one["fitted_on"] = fits_json({set_names(h.fitted_on), h.fits});
      one["not_held_out"] = h.not_held_out;
      one["summary_by_site"] = nlohmann::json::object();
      for (const auto& [site, summary] : summaries_by_site(h.replay))
        for (const costmodel::FigureSummary& f : summary)
          one["summary_by_site"][site].push_back(costmodel::figure_summary_json(f));
      j["held_out"].push_back(std::move(one));
    }
    std::puts(j.dump(2).c_str());
    return 0;
  }
  std::string text, table = fmt::format("{:<50} {:<24} {:>5} {:>10} {:>10} {:>13}\n", "held-out set", "figure", "rows",
                                        "mean|err|%", "max|err|%", "not held out");
  for (std::size_t i = 0; i < held.size(); ++i) {
    const costmodel::HeldOutReplay& h = held[i];
    text += fmt::format("== {} held out\n", sets[i].name);
    text += h.fits.empty() ? fmt::format("the other sets ({}) publish no figure a step time decides: nothing fitted\n",
                                         set_names(h.fitted_on))
                           : fits_table({set_names(h.fitted_on), h.fits});
    if (!h.not_held_out.empty())
      text += fmt::format("not held out ({} rows: their device and precision or kernels are fitted by no other set, so "
                          "they would replay on the shipped profile): {}\n",
                          h.not_held_out.size(), fmt::join(h.not_held_out, ", "));
    const std::map<std::string, std::vector<costmodel::FigureSummary>> by_site = summaries_by_site(h.replay);
    for (const auto& [site, summary] : by_site)
      for (const costmodel::FigureSummary& f : summary) {
        if (f.figure == "parameters") continue;
        const std::string held_out = by_site.size() > 1 ? fmt::format("{} on {}", sets[i].name, site) : sets[i].name;
        table += fmt::format("{:<50} {:<24} {:>5} {:>10.1f} {:>10.1f} {:>13}\n", held_out, f.figure, f.rows,
                             f.mean_abs_error_pct, f.max_abs_error_pct, h.not_held_out.size());
      }
    if (h.replay.rows.empty())
      table += fmt::format("{:<50} {:<24} {:>5} {:>10} {:>10} {:>13}\n", sets[i].name, "-", 0, "-", "-",
                           h.not_held_out.size());
    text += "\n";
  }
  std::fputs((text + table).c_str(), stdout);
  return 0;
}

}  // namespace

std::function<int()> add_predict_command(CLI::App& app) {
  auto options = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand("predict", "predict a case's step time, memory, throughput and MFU on a site");
  CLI::Option* config = cmd->add_option("--config", options->config, "case config (YAML; a named model or an inline one)");
  CLI::Option* site = cmd->add_option("--site", options->site, "site profile: a file, or a name in jobs/sites");
  CLI::Option* devices =
      cmd->add_option("--devices", options->devices, "device count (default dp × tp × pp)")->check(CLI::PositiveNumber);
  CLI::Option* overrides = cmd->add_option("--set", options->overrides, "override a config key: key=value (repeatable)");
  cmd->add_option("--validate", options->validate,
                  "a validation set: a file, or a name in validation/published; replay its published runs, each on the site "
                  "profile of its device, and print predicted, published and error per row, then mean and max "
                  "|error|; with --fit, on the e_max fitted on those sets instead (held out when it is not one of them)")
      ->excludes(config)
      ->excludes(site)
      ->excludes(devices)
      ->excludes(overrides);
  CLI::Option* fit =
      cmd->add_option("--fit", options->fit,
                      "validation sets (names or files, comma-separated): fit the GEMM model's e_max of each device "
                      "their rows run on, minimising the rows' mean |error|, and print it")
          ->excludes(config)
          ->excludes(site)
          ->excludes(devices)
          ->excludes(overrides);
  cmd->add_option("--cross-validate", options->cross_validate,
                  "validation sets (names or files, comma-separated, two or more): leave each out in turn, fit the "
                  "GEMM constants on the others and replay it on them; print per set its held-out errors and the "
                  "rows not held out (their device and key fitted by no other set)")
      ->excludes(config)
      ->excludes(site)
      ->excludes(devices)
      ->excludes(overrides)
      ->excludes(fit);
  cmd->add_option("--write-site", options->write_site,
                  "with --fit: write a copy of the fitted device's site profile with the fitted gemm.e_max to this path, or "
                  "into it as SITE.yaml per device when it is an existing folder (required when the sets run on several "
                  "devices)")
      ->needs(fit);
  cmd->add_flag("--json", options->json, "answer in JSON");
  return [options]() {
    if (!options->cross_validate.empty()) {
      SB_USER_CHECK(options->validate.empty(), "--cross-validate replays each of its sets held out: leave out "
                    "--validate {}", options->validate);
      return run_cross_validate(*options);
    }
    if (!options->fit.empty()) return run_fit(*options);
    if (!options->validate.empty()) {
      const costmodel::ValidationReplay replay =
          costmodel::replay_validation_set(costmodel::load_validation_set(costmodel::validation_set_path(options->validate)));
      if (options->json)
        std::puts(costmodel::validation_replay_json(replay).dump(2).c_str());
      else
        std::fputs(costmodel::validation_replay_table(replay).c_str(), stdout);
      return 0;
    }
    SB_USER_CHECK(!options->config.empty() && !options->site.empty(),
                  "predict needs --config CASE and --site SITE (or --validate SET)");
    const plan::TrainConfig config = costmodel::load_predict_case(options->config, options->overrides);
    const costmodel::SiteProfile site = costmodel::load_site_profile(costmodel::site_profile_path(options->site, "--site"));
    const plan::StrategySpec& s = config.strategy;
    if (options->devices > 0)
      costmodel::require_devices_within_site(site, options->devices, "--devices");
    else
      costmodel::require_devices_within_site(site, s.dp * s.tp * s.pp,
                                             fmt::format("strategy.dp × tp × pp ({} × {} × {})", s.dp, s.tp, s.pp));
    const costmodel::Prediction p = costmodel::predict_step(config, site, options->devices);
    const std::optional<costmodel::PredictionBand> band =
        p.feasible ? costmodel::prediction_band(site, p.step_time_s, config.model.kernels) : std::nullopt;
    const std::optional<std::string> refusal = train::trainer_refusal(config);
    if (options->json) {
      nlohmann::json j = costmodel::prediction_json(p);
      // why `train` would refuse this case (null: it trains it)
      j["trainer_refusal"] = refusal ? nlohmann::json(*refusal) : nlohmann::json(nullptr);
      // the step time's interval from the shipped validation rows on the site's device; null
      // when no published row runs on it
      j["band"] = band ? nlohmann::json{{"step_time_low_s", band->low_s},   {"step_time_high_s", band->high_s},
                                        {"low_ratio", band->low_ratio},     {"high_ratio", band->high_ratio},
                                        {"rows", band->rows},               {"device", band->device},
                                        {"sets", band->sets},               {"method", band->method}}
                       : nlohmann::json(nullptr);
      std::puts(j.dump(2).c_str());
    } else {
      std::string text = human_summary(p, site);
      const std::string on_kernels =
          config.model.kernels == "native" ? "" : fmt::format(" with {} kernels", config.model.kernels);
      if (p.feasible)
        text += band ? fmt::format("band          {:.4f} .. {:.4f} s  (measured/predicted {:.3f} .. {:.3f} over {} "
                                   "published rows on {}{}: {})\n",
                                   band->low_s, band->high_s, band->low_ratio, band->high_ratio, band->rows,
                                   band->device, on_kernels, band->sets)
                     : fmt::format("band          none: no shipped validation row runs on {}{}\n", site.device,
                                   on_kernels);
      text += refusal ? fmt::format("trainer       refuses it: {}\n", *refusal)
                      : std::string("trainer       trains it (`scalebench train` with this case)\n");
      std::fputs(text.c_str(), stdout);
    }
    return p.feasible ? 0 : 1;
  };
}

}  // namespace sb::cli
