// SPDX-License-Identifier: Apache-2.0
// Loading, replaying and printing validation sets. Leaves out the prediction (predict_step) and
// the case format (plan/config.hpp): a row's case is read as `predict` reads a case file.
#include "costmodel/validation_set.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <regex>

#include "core/check.hpp"
#include "core/heap_reuse.hpp"
#include "core/install_paths.hpp"
#include "costmodel/predict_case.hpp"
#include "models/gpt/gpt_config.hpp"
#include "plan/run_plan.hpp"

namespace sb::costmodel {

namespace {

constexpr const char* kFormat = "scalebench-validation-set";
constexpr int kVersion = 1;

// Refuses keys outside `known` and reports a missing required one, naming where.
void check_keys(const YAML::Node& node, const std::string& where, const std::vector<std::string>& known,
                const std::vector<std::string>& required) {
  SB_USER_CHECK(node.IsMap(), "{} must be a mapping of keys to values", where);
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    SB_USER_CHECK(std::find(known.begin(), known.end(), key) != known.end(), "{}: unknown key '{}' (known: {})",
                  where, key, fmt::join(known, ", "));
  }
  for (const std::string& key : required) SB_USER_CHECK(node[key], "{}: '{}' is missing", where, key);
}

template <class T>
T scalar(const YAML::Node& node, const std::string& where, const char* kind) {
  try {
    SB_USER_CHECK(node.IsScalar(), "{} must be a single value", where);
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw UserError(fmt::format("{} has value '{}', which is not {}", where, node.Scalar(), kind));
  }
}

ValidationRow read_row(const YAML::Node& node, const std::string& file, std::size_t index) {
  const std::string where = fmt::format("{}: rows[{}]", file, index);
  check_keys(node, where, {"id", "source", "model_source", "device", "gpus", "case", "assumed", "published"},
             {"id", "source", "device", "gpus", "case", "published"});
  ValidationRow row;
  row.id = scalar<std::string>(node["id"], where + ".id", "text");
  const std::string at = fmt::format("{}: row '{}'", file, row.id);
  row.source = scalar<std::string>(node["source"], at + " 'source'", "text");
  row.device = scalar<std::string>(node["device"], at + " 'device'", "text");
  row.gpus = scalar<int>(node["gpus"], at + " 'gpus'", "a whole number");
  SB_USER_CHECK(row.gpus > 0, "{}: 'gpus' must be positive, got {}", at, row.gpus);
  SB_USER_CHECK(node["case"].IsMap(), "{}: 'case' must be a mapping (a scalebench case)", at);
  row.case_node = YAML::Clone(node["case"]);
  if (node["assumed"]) {
    SB_USER_CHECK(node["assumed"].IsMap(), "{}: 'assumed' must map dotted case keys to values", at);
    for (const auto& item : node["assumed"])
      row.assumed.emplace_back(item.first.as<std::string>(),
                               scalar<std::string>(item.second, at + " 'assumed." + item.first.as<std::string>() + "'",
                                                   "a single value"));
  }
  SB_USER_CHECK(node["published"].IsMap() && node["published"].size() > 0,
                "{}: 'published' must map figure names to the source's values", at);
  const std::vector<std::string>& figures = validation_figures();
  for (const auto& item : node["published"]) {
    const std::string figure = item.first.as<std::string>();
    SB_USER_CHECK(std::find(figures.begin(), figures.end(), figure) != figures.end(),
                  "{}: unknown published figure '{}' (known: {})", at, figure, fmt::join(figures, ", "));
    const double value = scalar<double>(item.second, at + " 'published." + figure + "'", "a number");
    SB_USER_CHECK(value > 0 && std::isfinite(value), "{}: 'published.{}' must be positive, got {}", at, figure,
                  value);
    row.published[figure] = value;
  }
  return row;
}

// What the prediction says for a published figure.
double predicted_figure(const std::string& figure, const Prediction& p, const plan::TrainConfig& c, int gpus) {
  const double executed_share = p.tflops_per_device * 1e12 / p.peak_flops;
  if (figure == "step_time_s") return p.step_time_s;
  if (figure == "tokens_per_s") return p.tokens_per_s;
  if (figure == "tokens_per_s_per_device") return p.tokens_per_s / gpus;
  if (figure == "tflops_per_device") return p.tflops_per_device;
  if (figure == "aggregate_pflops") return p.tflops_per_device * gpus / 1e3;
  if (figure == "percent_of_peak" || figure == "hfu_percent") return 100.0 * executed_share;
  if (figure == "mfu_percent") return 100.0 * p.mfu;
  if (figure == "parameters") return static_cast<double>(gpt::gpt_parameter_count(plan::gpt_config_of(c)));
  if (figure == "memory_gib") return p.memory.total() / (1024.0 * 1024.0 * 1024.0);
  SB_CHECK(false, "validation figure '{}' has no prediction", figure);
  return 0.0;
}

// Whether the prediction answers `figure`: every figure of a feasible one; the memory also of one
// refused only for the memory it needs (a published run on a device larger than the profile's).
bool answers(const std::string& figure, const Prediction& p) {
  return p.feasible || (figure == "memory_gib" && p.refusal == Refusal::memory);
}

}  // namespace

bool time_figure(const std::string& figure) { return figure != "parameters" && figure != "memory_gib"; }

std::string versioned_name(const ValidationSet& set) { return fmt::format("{} version {}", set.name, set.version); }

nlohmann::json figure_summary_json(const FigureSummary& s) {
  return {{"figure", s.figure},
          {"rows", s.rows},
          {"infeasible", s.infeasible},
          {"mean_abs_error_pct", s.rows ? nlohmann::json(s.mean_abs_error_pct) : nlohmann::json(nullptr)},
          {"max_abs_error_pct", s.rows ? nlohmann::json(s.max_abs_error_pct) : nlohmann::json(nullptr)}};
}

const std::vector<std::string>& validation_figures() {
  static const std::vector<std::string> figures{"step_time_s",      "tokens_per_s",    "tokens_per_s_per_device",
                                                "tflops_per_device", "aggregate_pflops", "percent_of_peak",
                                                "mfu_percent",       "hfu_percent",     "parameters",
                                                "memory_gib"};
  return figures;
}

std::filesystem::path validation_set_path(const std::string& set) {
  if (std::filesystem::exists(set) || set.find('/') != std::string::npos) return set;
  const std::filesystem::path shipped = resource_dir() / "validation" / "published" / (set + ".yaml");
  SB_USER_CHECK(std::filesystem::exists(shipped), "--validate '{}' is neither a file nor a set in {}", set,
                shipped.parent_path().string());
  return shipped;
}

ValidationSet load_validation_set(const std::filesystem::path& path) {
  const YAML::Node root = plan::load_yaml_file(path);
  const std::string file = path.string();
  check_keys(root, file, {"format", "version", "name", "source", "notes", "columns", "rows"},
             {"format", "version", "name", "source", "columns", "rows"});
  const auto format = scalar<std::string>(root["format"], file + ": 'format'", "text");
  SB_USER_CHECK(format == kFormat, "{}: 'format' is '{}', not {}: not a validation set", file, format, kFormat);
  ValidationSet set;
  set.file = file;
  set.version = scalar<int>(root["version"], file + ": 'version'", "a whole number");
  SB_USER_CHECK(set.version == kVersion, "{}: version {} of the validation-set format; this scalebench reads version {}",
                file, set.version, kVersion);
  set.name = scalar<std::string>(root["name"], file + ": 'name'", "text");
  set.source = scalar<std::string>(root["source"], file + ": 'source'", "text");
  SB_USER_CHECK(root["columns"].IsMap(), "{}: 'columns' must define each column", file);
  SB_USER_CHECK(root["rows"].IsSequence() && root["rows"].size() > 0, "{}: 'rows' must be a non-empty list", file);
  for (std::size_t i = 0; i < root["rows"].size(); ++i) {
    set.rows.push_back(read_row(root["rows"][i], file, i));
    for (std::size_t j = 0; j + 1 < set.rows.size(); ++j)
      SB_USER_CHECK(set.rows[j].id != set.rows.back().id, "{}: row id '{}' is given twice", file, set.rows.back().id);
  }
  return set;
}

plan::TrainConfig validation_case(const ValidationSet& set, const ValidationRow& row) {
  YAML::Node root = YAML::Clone(row.case_node);
  const std::string source = fmt::format("{} row '{}'", set.file, row.id);
  for (const auto& [key, value] : row.assumed) plan::apply_override(root, key + "=" + value, source);
  return parse_predict_case(root, source);
}

SiteProfile validation_site(const ValidationSet& set, const ValidationRow& row) {
  std::vector<std::string> devices;
  for (const std::filesystem::path& dir : site_profile_dirs()) {
    if (!std::filesystem::is_directory(dir)) continue;
    std::vector<std::filesystem::path> profiles;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".yaml") profiles.push_back(entry.path());
    std::sort(profiles.begin(), profiles.end());
    for (const std::filesystem::path& profile : profiles) {
      SiteProfile site = load_site_profile(profile);
      if (site.device == row.device) return site;
      devices.push_back(site.device);
    }
  }
  throw UserError(fmt::format("{} row '{}': no site profile has device '{}' (the profiles have: {}); add one "
                              "to jobs/sites or ~/.config/scalebench/sites", set.file, row.id, row.device,
                              fmt::join(devices, "; ")));
}

namespace {

void set_fitted(SiteProfile& site, const std::vector<EmaxFit>& fitted) {
  for (const EmaxFit& fit : fitted) {
    if (fit.device != site.device) continue;
    SB_USER_CHECK(site.gemm.has_value(),
                  "{}: the profile of {} has no 'gemm:' (sm_count, e_max), so its GEMM efficiency cannot be fitted",
                  site.source, site.device);
    const std::optional<double> kept = site.gemm->constants_of(fit.key).e_attention;
    site.gemm->set_constants(fit.key, fit.e_max, fit.k_overhead,
                             fit.e_attention_fitted ? std::optional(fit.e_attention) : kept);
  }
}

// The mean |error| of a feasible prediction's figures that depend on its time (time_figure).
std::optional<double> row_error(const ValidationRow& row, const plan::TrainConfig& config, const Prediction& p) {
  if (!p.feasible) return std::nullopt;
  double sum = 0;
  int n = 0;
  for (const auto& [figure, published] : row.published) {
    if (!time_figure(figure)) continue;
    sum += std::fabs(100.0 * (predicted_figure(figure, p, config, row.gpus) - published) / published);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

ValidationReplay replay_validation_set(const ValidationSet& set) { return replay_validation_set(set, {}); }

ValidationReplay replay_validation_set(const ValidationSet& set, const std::vector<EmaxFit>& fitted) {
  ValidationReplay replay{set.file, set.name, set.source, set.version, {}, {}};
  for (const ValidationRow& row : set.rows) {
    const plan::TrainConfig config = validation_case(set, row);
    SiteProfile site = validation_site(set, row);
    set_fitted(site, fitted);
    const Prediction p = predict_step(config, site, row.gpus);
    RowReplay r{row.id, row.source, site.name, p.feasible, p.reason, {}};
    for (const std::string& figure : validation_figures()) {
      const auto published = row.published.find(figure);
      if (published == row.published.end()) continue;
      FigureComparison f{figure, published->second, std::nullopt, std::nullopt};
      if (answers(figure, p)) {
        f.predicted = predicted_figure(figure, p, config, row.gpus);
        f.error_pct = 100.0 * (*f.predicted - f.published) / f.published;
      }
      r.figures.push_back(f);
    }
    replay.rows.push_back(std::move(r));
  }
  replay.summary = summarize_figures(replay.rows);
  return replay;
}

std::vector<FigureSummary> summarize_figures(const std::vector<RowReplay>& rows) {
  std::vector<FigureSummary> summary;
  for (const std::string& figure : validation_figures()) {
    FigureSummary s{figure, 0, 0, 0.0, 0.0};
    for (const RowReplay& r : rows)
      for (const FigureComparison& f : r.figures) {
        if (f.figure != figure) continue;
        if (!f.error_pct) {
          ++s.infeasible;
          continue;
        }
        ++s.rows;
        s.mean_abs_error_pct += std::fabs(*f.error_pct);
        s.max_abs_error_pct = std::max(s.max_abs_error_pct, std::fabs(*f.error_pct));
      }
    if (s.rows + s.infeasible == 0) continue;
    if (s.rows > 0) s.mean_abs_error_pct /= s.rows;
    summary.push_back(s);
  }
  return summary;
}

nlohmann::json validation_replay_json(const ValidationReplay& replay) {
  const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j{{"file", replay.file}, {"name", replay.name}, {"source", replay.source},
                   {"version", replay.version}, {"rows", nlohmann::json::array()},
                   {"summary", nlohmann::json::array()},
                   // what the predicted mfu_percent and hfu_percent count (each row's site names its peak)
                   {"mfu_convention", kMfuConvention}};
  for (const RowReplay& r : replay.rows) {
    nlohmann::json row{{"id", r.id},
                       {"source", r.source},
                       {"site", r.site},
                       {"feasible", r.feasible},
                       {"reason", r.feasible ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
                       {"figures", nlohmann::json::array()}};
    for (const FigureComparison& f : r.figures)
      row["figures"].push_back({{"figure", f.figure},
                                {"published", f.published},
                                {"predicted", optional(f.predicted)},
                                {"error_pct", optional(f.error_pct)}});
    j["rows"].push_back(row);
  }
  for (const FigureSummary& s : replay.summary) j["summary"].push_back(figure_summary_json(s));
  return j;
}

std::string validation_replay_table(const ValidationReplay& replay) {
  std::string out = fmt::format("{} (version {}, {})\n", replay.name, replay.version, replay.file);
  out += fmt::format("{:<22} {:<20} {:<24} {:>14} {:>14} {:>9}\n", "row", "site", "figure", "predicted",
                     "published", "error");
  for (const RowReplay& r : replay.rows) {
    // an infeasible row still answers its memory (how much more than the device holds)
    for (const FigureComparison& f : r.figures)
      if (f.predicted)
        out += fmt::format("{:<22} {:<20} {:<24} {:>14.6g} {:>14.6g} {:>+8.1f}%\n", r.id, r.site, f.figure,
                           *f.predicted, f.published, *f.error_pct);
    if (!r.feasible) out += fmt::format("{:<22} {:<20} infeasible: {}\n", r.id, r.site, r.reason);
  }
  out += "\n";
  for (const FigureSummary& s : replay.summary) {
    if (s.rows == 0) {
      out += fmt::format("{:<24} no feasible row ({} infeasible)\n", s.figure, s.infeasible);
      continue;
    }
    out += fmt::format("{:<24} {} rows: mean |error| {:.1f}%, max |error| {:.1f}%{}\n", s.figure, s.rows,
                       s.mean_abs_error_pct, s.max_abs_error_pct,
                       s.infeasible ? fmt::format(" ({} infeasible)", s.infeasible) : std::string());
  }
  return out;
}

namespace {

// Whether a row publishes a figure its step time decides: a row that publishes only its memory or
// parameter count has nothing to fit the GEMM constants on and depends on none of them.
bool publishes_time_figure(const ValidationRow& row) {
  return std::any_of(row.published.begin(), row.published.end(),
                     [](const auto& figure) { return time_figure(figure.first); });
}

// The profile key a row's GEMMs run at (e_max, e_max_fp8, e_max_sm80): with its device, the fit it
// belongs to.
std::string gemm_key_of(const plan::TrainConfig& config) {
  return GemmModel::key_for(config.precision.dtype, config.model.kernels);
}

// The constants a fit moves: the key's efficiency, k_overhead and, where fitted, e_attention.
struct GemmConstants {
  double e = 1.0, k_overhead = 0;
  std::optional<double> e_attention;
};

// One device's rows under one key, with the objective of the fit: over the sets, each set's
// mean over its feasible rows of each row's mean |error| at the constants, averaged (each set
// weighs alike, however many rows it has).
struct FitRows {
  struct Case {
    const ValidationRow* row;
    std::size_t set;  // its set's index among the fit's sets
    plan::TrainConfig config;
    SiteProfile site;
  };
  std::string key;
  std::vector<Case> cases;

  double error(const GemmConstants& at, int* feasible = nullptr, int* infeasible = nullptr, double* worst = nullptr) {
    // the rows on the OpenMP threads (each case holds its own site), summed in row order
    std::vector<std::optional<double>> errors(cases.size());
#pragma omp parallel for schedule(dynamic)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      Case& c = cases[i];
      c.site.gemm->set_constants(key, at.e, at.k_overhead, at.e_attention);
      errors[i] = row_error(*c.row, c.config, predict_step(c.config, c.site, c.row->gpus));
    }
    std::map<std::size_t, std::pair<double, int>> per_set;  // each set's sum and count of feasible rows
    int n = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (!errors[i]) {
        if (infeasible) ++*infeasible;
        continue;
      }
      auto& [sum, count] = per_set[cases[i].set];
      sum += *errors[i];
      ++count;
      ++n;
      if (worst) *worst = std::max(*worst, *errors[i]);
    }
    if (feasible) *feasible = n;
    double mean_of_sets = 0;
    for (const auto& [set, sum_count] : per_set) mean_of_sets += sum_count.first / sum_count.second;
    return n == 0 ? std::numeric_limits<double>::infinity() : mean_of_sets / static_cast<double>(per_set.size());
  }
  // k_overhead is fitted only where the rows' models have three widths or more: one width's rows
  // all see the same K/(K + k_overhead), which e_max alone then carries, and e_max with
  // k_overhead pass through any two widths' rows whatever the GEMMs' real overhead (the fit
  // would interpolate, not test, the shape model). And only where the overhead sets the rows
  // apart by more than published figures scatter: the narrowest and the widest model's
  // C/(C + k_overhead), at the profile `g`'s k_overhead (one output tile's K where it has none),
  // at least kSeparation apart. Wide models alone (the H100's: 6144 to 18432, 0.944 to 0.981)
  // leave e_max and k_overhead trading against each other (k_overhead fitted to 0).
  static constexpr double kSeparation = 0.05;
  bool spans_widths(const GemmModel& g) const {
    std::set<std::int64_t> widths;
    for (const Case& c : cases)
      widths.insert(plan::trains_resnet(c.config) ? 0 : plan::gpt_config_of(c.config).channels);
    if (widths.size() < 3 || *widths.begin() <= 0) return false;
    const double k = g.k_overhead > 0 ? g.k_overhead : static_cast<double>(g.tile_m);
    const auto share = [k](std::int64_t width) { return static_cast<double>(width) / (static_cast<double>(width) + k); };
    return share(*widths.rbegin()) - share(*widths.begin()) >= kSeparation;
  }
  // e_attention is fitted only where the rows with the fused attention give it three shares of
  // their FLOPs or more (ratios of sequence length to width: its FLOPs per token grow with the
  // length, the linear layers' with the width); at one share e_max carries it, and at two the
  // fit passes through both whatever the attention kernel's real efficiency.
  bool spans_attention_shares() const {
    std::set<double> shares;
    for (const Case& c : cases) {
      if (plan::trains_resnet(c.config) || c.config.model.attention != "flash") continue;
      shares.insert(static_cast<double>(plan::gpt_seq_len(c.config)) /
                    static_cast<double>(plan::gpt_config_of(c.config).channels));
    }
    return shares.size() >= 3;
  }
};

// The minimum of f over [lo, hi] by golden section to `tolerance`: {x, f(x)}.
template <typename F>
std::pair<double, double> golden_minimum(F&& f, double lo, double hi, double tolerance) {
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
  double f1 = f(x1), f2 = f(x2);
  while (hi - lo > tolerance) {
    if (f1 <= f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - phi * (hi - lo);
      f1 = f(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + phi * (hi - lo);
      f2 = f(x2);
    }
  }
  return f1 <= f2 ? std::pair{x1, f1} : std::pair{x2, f2};
}

// The efficiency in (0, 1] minimising the rows' error at the other constants: a grid of 0.01
// over [0.20, 1.00], then golden section to 1e-4 around the grid's best; the constants with it.
GemmConstants fit_efficiency(FitRows& rows, GemmConstants at) {
  const auto error_at = [&](double e) {
    GemmConstants x = at;
    x.e = e;
    return rows.error(x);
  };
  double best = 1.0, best_error = std::numeric_limits<double>::infinity();
  for (int i = 20; i <= 100; ++i) {
    const double e = i / 100.0, error = error_at(e);
    if (error < best_error) best = e, best_error = error;
  }
  const auto [golden, golden_error] =
      golden_minimum(error_at, std::max(0.01, best - 0.01), std::min(1.0, best + 0.01), 1e-4);
  if (golden_error < best_error) best = golden;
  at.e = std::round(best * 1e4) / 1e4;
  return at;
}

// k_overhead and the efficiency together: per k_overhead of a grid of 128 over [0, 1024] the
// efficiency by golden section over [0.20, 1.00] to 1e-3, then golden section on k_overhead to
// 8 around the grid's best, rounded to a whole step; the efficiency then by golden section to
// 1e-4 within 0.01 of the one found there.
GemmConstants fit_k_overhead(FitRows& rows, GemmConstants at) {
  const auto efficiency_at = [&](double k) {
    GemmConstants x = at;
    x.k_overhead = k;
    return golden_minimum([&](double e) { x.e = e; return rows.error(x); }, 0.2, 1.0, 1e-3);
  };
  double best = 0, best_error = std::numeric_limits<double>::infinity();
  for (int k = 0; k <= 1024; k += 128) {
    const double error = efficiency_at(k).second;
    if (error < best_error) best = k, best_error = error;
  }
  const auto [golden, golden_error] =
      golden_minimum([&](double k) { return efficiency_at(k).second; }, std::max(0.0, best - 128), best + 128, 8.0);
  at.k_overhead = std::round(golden_error < best_error ? golden : best);
  const double e = efficiency_at(at.k_overhead).first;
  at.e = golden_minimum([&](double x) { at.e = x; return rows.error(at); }, std::max(0.01, e - 0.01),
                        std::min(1.0, e + 0.01), 1e-4).first;
  at.e = std::round(at.e * 1e4) / 1e4;
  return at;
}

// e_attention in [0.05, 1] at the other constants, by golden section to 1e-4.
GemmConstants fit_e_attention(FitRows& rows, GemmConstants at) {
  const double e = golden_minimum([&](double x) { at.e_attention = x; return rows.error(at); }, 0.05, 1.0, 1e-4).first;
  at.e_attention = std::round(e * 1e4) / 1e4;
  return at;
}

}  // namespace

std::vector<EmaxFit> fit_gemm_e_max(const std::vector<ValidationSet>& sets) {
  keep_freed_heap_for_reuse();  // every row's prediction at every trial allocates and frees its simulation's few MiB
  // one fit per device and key, in the order the rows name them
  std::vector<std::pair<std::string, std::string>> groups;
  std::map<std::pair<std::string, std::string>, FitRows> grouped;
  for (const ValidationSet& set : sets)
    for (const ValidationRow& row : set.rows) {
      if (!publishes_time_figure(row)) continue;
      SiteProfile site = validation_site(set, row);
      SB_USER_CHECK(site.gemm.has_value(),
                    "{}: the profile of {} (row '{}' of {}) has no 'gemm:' (sm_count, e_max), so its GEMM efficiency "
                    "cannot be fitted", site.source, site.device, row.id, set.file);
      plan::TrainConfig config = validation_case(set, row);
      const std::pair<std::string, std::string> group{row.device, gemm_key_of(config)};
      if (!grouped.count(group)) groups.push_back(group);
      grouped[group].key = group.second;
      grouped[group].cases.push_back({&row, static_cast<std::size_t>(&set - sets.data()), std::move(config),
                                      std::move(site)});
    }
  if (groups.empty()) {
    std::vector<std::string> files;
    for (const ValidationSet& set : sets) files.push_back(set.file);
    throw UserError(fmt::format("--fit {}: no row publishes a figure its step time decides (only memory or "
                                "parameters), so there is nothing to fit the GEMM constants on",
                                fmt::join(files, ", ")));
  }
  std::vector<EmaxFit> fits;
  for (const auto& group : groups) {
    FitRows& rows = grouped[group];
    EmaxFit fit;
    fit.device = group.first;
    fit.key = group.second;
    fit.site = rows.cases.front().site.name;
    fit.site_file = rows.cases.front().site.source;
    // the key's constants as the profile ships them, read before the fit moves the cases' own
    const GemmModel::KeyConstants shipped = rows.cases.front().site.gemm->constants_of(fit.key);
    fit.shipped_e_max = shipped.e.value_or(std::numeric_limits<double>::quiet_NaN());
    fit.shipped_k_overhead = fit.k_overhead = shipped.k_overhead;
    fit.shipped_e_attention = shipped.e_attention;
    GemmConstants at{shipped.e.value_or(1.0), shipped.k_overhead, shipped.e_attention};
    // which rows are feasible does not depend on the efficiency (memory): count them at any value
    const double shipped_error = rows.error(at, nullptr, &fit.infeasible);
    SB_USER_CHECK(std::isfinite(shipped_error),
                  "no row on {} is feasible in the cost model ({} rows), so its GEMM {} cannot be fitted", fit.device,
                  rows.cases.size(), fit.key);
    fit.shipped_mean_abs_error_pct = shipped.e ? shipped_error : std::numeric_limits<double>::quiet_NaN();
    // e_max_fp8 and e_max_sm80 alone: their rows run the profile's k_overhead and attention
    fit.k_overhead_fitted = fit.key == "e_max" && rows.spans_widths(*rows.cases.front().site.gemm);
    // e_attention with k_overhead only: the fused kernel's time carries both (its loop over the
    // keys pays the same per-tile overhead), so against a borrowed k_overhead it would absorb
    // the overhead's error rather than measure the kernel
    fit.e_attention_fitted = fit.k_overhead_fitted && rows.spans_attention_shares();
    // the GEMMs' constants and the attention's by turns: twice each, the attention's first
    const auto fit_gemms = [&] { at = fit.k_overhead_fitted ? fit_k_overhead(rows, at) : fit_efficiency(rows, at); };
    for (int round = 0; round < (fit.e_attention_fitted ? 2 : 1); ++round) {
      if (fit.e_attention_fitted) at = fit_e_attention(rows, at);
      fit_gemms();
    }
    if (fit.e_attention_fitted) at = fit_e_attention(rows, at);
    fit.e_max = at.e;
    fit.k_overhead = at.k_overhead;
    fit.e_attention = at.e_attention.value_or(std::numeric_limits<double>::quiet_NaN());
    fit.mean_abs_error_pct = rows.error(at, &fit.rows, nullptr, &fit.max_abs_error_pct);
    fits.push_back(fit);
  }
  return fits;
}

std::vector<HeldOutReplay> leave_one_set_out(const std::vector<ValidationSet>& sets) {
  SB_USER_CHECK(sets.size() >= 2, "--cross-validate needs two sets or more to leave each out of a fit on the "
                "others, got {}", sets.size());
  std::vector<HeldOutReplay> out;
  for (std::size_t held = 0; held < sets.size(); ++held) {
    HeldOutReplay h;
    std::vector<ValidationSet> others;
    for (std::size_t i = 0; i < sets.size(); ++i)
      if (i != held) {
        others.push_back(sets[i]);
        h.fitted_on.push_back(versioned_name(sets[i]));
      }
    const bool fittable = std::any_of(others.begin(), others.end(), [&](const ValidationSet& set) {
      return std::any_of(set.rows.begin(), set.rows.end(), publishes_time_figure);
    });
    if (fittable) h.fits = fit_gemm_e_max(others);
    ValidationSet kept = sets[held];
    kept.rows.clear();
    for (const ValidationRow& row : sets[held].rows) {
      const std::string key = gemm_key_of(validation_case(sets[held], row));
      const bool fitted = std::any_of(h.fits.begin(), h.fits.end(),
                                      [&](const EmaxFit& f) { return f.device == row.device && f.key == key; });
      if (fitted || !publishes_time_figure(row)) kept.rows.push_back(row);
      else h.not_held_out.push_back(row.id);
    }
    h.replay = replay_validation_set(kept, h.fits);
    out.push_back(std::move(h));
  }
  return out;
}

std::string site_profile_with_e_max(const std::string& text, const std::string& file, double e_max,
                                    const std::string& provenance, const std::string& key) {
  const auto lines_of = [&](const std::string& name) {
    const std::regex line("(^|\\n)([ \\t]+)" + name + ":[^\\n]*");
    std::vector<std::smatch> found;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
      found.push_back(*it);
    return found;
  };
  const std::vector<std::smatch> base = lines_of("e_max");
  SB_USER_CHECK(base.size() == 1, "{}: {} 'gemm.e_max' lines where one is expected; give the profile one gemm: "
                "mapping with sm_count and e_max", file, base.size());
  const std::vector<std::smatch> target = key == "e_max" ? base : lines_of(key);
  SB_USER_CHECK(target.size() <= 1, "{}: {} 'gemm.{}' lines where one is replaced", file, target.size(), key);
  const std::string indent = base.front()[2].str();
  const std::string value =
      key.rfind("k_overhead", 0) == 0 ? fmt::format("{:.0f}", e_max) : fmt::format("{:.4f}", e_max);
  const std::string written = indent + fmt::format("{}: {}   # {}", key, value, provenance);
  if (target.empty()) {  // a new line after e_max's
    const auto after = static_cast<std::size_t>(base.front().position(0) + base.front().length(0));
    return text.substr(0, after) + "\n" + written + text.substr(after);
  }
  const std::smatch& m = target.front();
  return text.substr(0, static_cast<std::size_t>(m.position(0))) + m[1].str() + written +
         text.substr(static_cast<std::size_t>(m.position(0) + m.length(0)));
}

}  // namespace sb::costmodel
