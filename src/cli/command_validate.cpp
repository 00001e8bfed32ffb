// SPDX-License-Identifier: Apache-2.0
// `scalebench validate RESULTS.h5... --spec SPEC.yaml [--json]`: the procurement check. Judges
// every claim of the spec against the result files and prints a pass/fail/missing table (or
// the same verdicts as JSON, for scripts and tests); exit 0 when every claim passes, 1 when
// one fails or has no measurement in the files (the others still judged), 2 (a UserError, via
// main) for a bad spec or a file that is not a result file. Leaves out parsing and judging (src/validate).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "validate/claims.hpp"
#include "validate/spec.hpp"

namespace sb::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  std::string spec;
  bool json = false;
};

std::string measured_text(const validate::Verdict& v) {
  if (std::isnan(v.measured)) return "-";
  return v.unit.empty() ? fmt::format("{:.4g}", v.measured) : fmt::format("{:.4g} {}", v.measured, v.unit);
}

void print_table(const validate::Spec& spec, const std::vector<validate::Verdict>& verdicts) {
  std::size_t name_width = 5, what_width = 11, measured_width = 8, requirement_width = 8;
  for (const auto& v : verdicts) {
    name_width = std::max(name_width, v.claim.size());
    what_width = std::max(what_width, v.what.size());
    measured_width = std::max(measured_width, measured_text(v).size());
    requirement_width = std::max(requirement_width, v.requirement.size());
  }
  std::printf("spec %s: %zu claims\n", spec.name.c_str(), verdicts.size());
  const auto row = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                       const std::string& e) {
    std::printf("%s\n", fmt::format("{:<{}}  {:<{}}  {:>{}}  {:<{}}  {}", a, name_width, b, what_width, c,
                                    measured_width, d, requirement_width, e)
                            .c_str());
  };
  row("claim", "measurement", "measured", "required", "result");
  std::size_t passed = 0, missing = 0;
  for (const auto& v : verdicts) {
    passed += v.pass;
    missing += v.missing;
    const std::string result = v.pass ? "pass" : v.missing ? "MISSING" : "FAIL";
    row(v.claim, v.what, measured_text(v), v.requirement, v.note.empty() ? result : result + ": " + v.note);
  }
  std::printf("%zu of %zu claims pass%s\n", passed, verdicts.size(),
              missing ? fmt::format(", {} without a measurement", missing).c_str() : "");
}

// {"spec", "files", "pass", "passed", "missing", "claims": [{"claim", "measurement", "measured"
// (null when the run behind it did not finish or is missing), "unit", "required" (the words),
// "threshold" (the least value passing, or the claimed figure for a ± claim), "tolerance_pct"
// (null but for ± claims), "result" (pass | fail | missing), "pass", "note"}]}: numbers as numbers
nlohmann::json verdicts_json(const validate::Spec& spec, const std::vector<std::string>& files,
                             const std::vector<validate::Verdict>& verdicts) {
  nlohmann::json claims = nlohmann::json::array();
  const auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  std::size_t passed = 0, missing = 0;
  for (const auto& v : verdicts) {
    passed += v.pass;
    missing += v.missing;
    claims.push_back({{"claim", v.claim},
                      {"measurement", v.what},
                      {"measured", number(v.measured)},
                      {"unit", v.unit},
                      {"required", v.requirement},
                      {"threshold", number(v.threshold)},
                      {"tolerance_pct", number(v.tolerance_pct)},
                      {"result", v.pass ? "pass" : v.missing ? "missing" : "fail"},
                      {"pass", v.pass},
                      {"note", v.note}});
  }
  return {{"spec", spec.name}, {"files", files},     {"pass", passed == verdicts.size()},
          {"passed", passed},  {"missing", missing}, {"claims", claims}};
}

}  // namespace

std::function<int()> add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "check a procurement spec's claims (GEMM, bus bandwidth, throughput, scaling, MFU) against result files");
  cmd->add_option("files", o->files, "result files (HDF5): runs and /calibration tables")->required();
  cmd->add_option("--spec", o->spec, "the spec (YAML; see jobs/specs/README.md)")->required();
  cmd->add_flag("--json", o->json, "print the verdicts as JSON instead of a table (same exit status)");
  return [o]() {
    for (const std::string& file : o->files) {
      SB_USER_CHECK(std::filesystem::exists(file), "validate: result file '{}' does not exist", file);
      require_regular_file(file, "validate: result file");
    }
    const validate::Spec spec = validate::load_spec(o->spec);
    const std::vector<std::filesystem::path> files(o->files.begin(), o->files.end());
    const auto verdicts = validate::judge_claims(spec, o->spec, files);
    if (o->json)
      std::puts(verdicts_json(spec, o->files, verdicts).dump(2).c_str());
    else
      print_table(spec, verdicts);
    for (const auto& v : verdicts)
      if (!v.pass) return 1;
    return 0;
  };
}

}  // namespace sb::cli
