// SPDX-License-Identifier: Apache-2.0
// Validation sets (validation/published/*.yaml, format in validation/README.md): published
// training runs, each a case with the figures its source reports, and their replay through the
// cost model on the shipped site profile of the run's device. Leaves out any judgement: a replay
// reports its errors, it does not pass or fail.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "plan/config.hpp"

namespace sb::costmodel {

struct ValidationRow {
  std::string id, source, device;
  int gpus = 0;
  YAML::Node case_node;                                     // the published configuration
  std::vector<std::pair<std::string, std::string>> assumed;  // dotted key, value: not published
  std::map<std::string, double> published;                   // figure name -> value
};

struct ValidationSet {
  std::string file, name, source;
  int version = 0;
  std::vector<ValidationRow> rows;
};

// The figures a row may publish and how the prediction answers each:
//   step_time_s, tokens_per_s: as predicted; tokens_per_s_per_device: tokens_per_s / gpus;
//   tflops_per_device: executed FLOPs (recomputation included) per second and device, in 1e12;
//   aggregate_pflops: that over all gpus, in 1e15; percent_of_peak and hfu_percent: executed
//   FLOP/s over the dense peak, percent; mfu_percent: model FLOPs (3 × forward) over the peak,
//   percent; parameters: the model's parameter count; memory_gib: the most loaded rank's bytes
//   (model state, activations, ZeRO-3's buffers) in GiB, also where the row's device is smaller
//   than the layout needs (the prediction is refused for memory and still says how much).
const std::vector<std::string>& validation_figures();
// Whether a row's step time decides the figure (all but parameters and memory_gib): what a fit of
// the GEMM constants and a prediction band weigh.
bool time_figure(const std::string& figure);

// Where a set named on the command line lives: an existing file or anything with a '/' is a
// path as given; a bare name is NAME.yaml in resource_dir()/validation/published (the shipped
// sets). UserError naming the folder when a name has no set.
std::filesystem::path validation_set_path(const std::string& set);

// Reads and checks a set: format scalebench-validation-set, version 1, every row's keys, every
// published figure one of validation_figures(). UserError naming the file, row and key at fault.
ValidationSet load_validation_set(const std::filesystem::path& path);

// The row's case as `predict` reads it: the published case, the assumed keys set over it, the
// model family's data set (load_predict_case's rule).
plan::TrainConfig validation_case(const ValidationSet& set, const ValidationRow& row);

// The shipped (or user) site profile whose `device` is the row's; UserError naming the row, the
// device and the devices the profiles have when none is.
SiteProfile validation_site(const ValidationSet& set, const ValidationRow& row);

struct FigureComparison {
  std::string figure;
  double published = 0;
  std::optional<double> predicted;  // none when the prediction is infeasible
  std::optional<double> error_pct;  // 100 · (predicted − published) / published
};

struct RowReplay {
  std::string id, source, site;
  bool feasible = false;
  std::string reason;
  std::vector<FigureComparison> figures;
};

struct FigureSummary {
  std::string figure;
  int rows = 0;        // rows that publish the figure and were predicted
  int infeasible = 0;  // rows that publish it but whose prediction is infeasible
  double mean_abs_error_pct = 0, max_abs_error_pct = 0;
};

struct ValidationReplay {
  std::string file, name, source;
  int version = 0;
  std::vector<RowReplay> rows;
  std::vector<FigureSummary> summary;  // in validation_figures() order, figures some row publishes
};

// Per figure some row publishes (validation_figures() order): rows predicted and infeasible, mean
// and max |error| of the predicted.
std::vector<FigureSummary> summarize_figures(const std::vector<RowReplay>& rows);

// "NAME version N": how a fit's provenance and a band name a set.
std::string versioned_name(const ValidationSet& set);

// One summary entry as the replay JSON writes it (the errors null where no row was predicted).
nlohmann::json figure_summary_json(const FigureSummary& summary);

// Predicts every row on the shipped site profile of its device at its gpus.
ValidationReplay replay_validation_set(const ValidationSet& set);

// `predict --fit`: per device the rows of the sets run on, the GEMM model's e_max in (0, 1]
// that minimises the mean over those rows of each row's mean |error| over its published figures
// (parameters and memory_gib left out: e_max moves neither; a row publishing nothing else is
// not part of the fit, and sets without any other figure are a UserError); a 1-D search (a grid of 0.01, then golden
// section to 1e-4). Where the rows are of two model widths or more, k_overhead with it (a grid
// of 128 over [0, 1024], then golden section to 8, rounded to a whole step): one width's rows
// all see the same K/(K + k_overhead) and cannot tell it from e_max. Rows the cost model finds infeasible are left out (their memory does not
// depend on e_max) and counted. UserError naming the device when its profile has no `gemm:` or
// none of its rows is feasible.
// Rows in fp8 fit the device's e_max_fp8 (its fp8 GEMMs against the fp8 peak), the others its
// e_max: one fit per device and key. A profile without e_max_fp8 has no shipped value (NaN).
struct EmaxFit {
  std::string device, site, site_file;
  std::string key = "e_max";  // the profile key fitted: e_max or e_max_fp8
  double shipped_e_max = 0, e_max = 0;
  // gemm.k_overhead: fitted with e_max where the device's rows have two model widths or more,
  // else (and for e_max_fp8) the profile's, kept
  double shipped_k_overhead = 0, k_overhead = 0;
  bool k_overhead_fitted = false;
  // gemm.e_attention: fitted with them where the device's 16-bit rows with the fused attention
  // give it two shares of their FLOPs or more (two ratios of sequence length to width), else the
  // profile's is kept (none: NaN)
  std::optional<double> shipped_e_attention;
  double e_attention = 0;
  bool e_attention_fitted = false;
  int rows = 0, infeasible = 0;
  double shipped_mean_abs_error_pct = 0, mean_abs_error_pct = 0, max_abs_error_pct = 0;  // the objective's
};
std::vector<EmaxFit> fit_gemm_e_max(const std::vector<ValidationSet>& sets);

// A set's replay (above) on GEMM efficiencies `fitted` (fit_gemm_e_max) in place of the shipped
// profiles' for their device and key: a replay held out of the fit (UserError naming the profile
// when it has no `gemm:`).
ValidationReplay replay_validation_set(const ValidationSet& set, const std::vector<EmaxFit>& fitted);

// `predict --cross-validate`: each set left out in turn, replayed on the GEMM constants fitted
// on the others (fit_gemm_e_max). A row is held out when no constant its figures depend on comes
// from the shipped profile (perhaps fitted on its own set): it publishes only figures its step
// time does not decide (memory, parameters), or the others fit its device and key (e_max,
// e_max_fp8, e_max_sm80). The set's other rows are named in not_held_out and left out of its
// replay. UserError when fewer than two sets are given.
struct HeldOutReplay {
  std::vector<std::string> fitted_on;    // "SET version N" of the other sets
  std::vector<EmaxFit> fits;             // on them; none when no row of theirs publishes a time figure
  ValidationReplay replay;               // the set's held-out rows
  std::vector<std::string> not_held_out; // ids of the rest
};
std::vector<HeldOutReplay> leave_one_set_out(const std::vector<ValidationSet>& sets);

// A site profile's text with its `gemm.<key>` line (e_max, e_max_fp8 or k_overhead, the last a
// whole number) replaced by the value and a comment naming `provenance`; an e_max_fp8 or
// k_overhead the text lacks goes on a line of its own after e_max. UserError naming `file` when the text has no e_max line (or more than one of either).
std::string site_profile_with_e_max(const std::string& text, const std::string& file, double e_max,
                                    const std::string& provenance, const std::string& key = "e_max");

nlohmann::json validation_replay_json(const ValidationReplay& replay);
std::string validation_replay_table(const ValidationReplay& replay);

}  // namespace sb::costmodel
