// SPDX-License-Identifier: Apache-2.0
// The measurements behind each claim kind and the tolerance test. Scaling efficiency is
// throughput per rank of the scaled run over that of the base run, which is T1/(N·TN) for
// strong scaling and T1/TN for weak scaling alike.
#include "validate/claims.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/check.hpp"
#include "io/results_reader.hpp"

namespace sb::validate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string format_bytes(std::int64_t bytes) {
  if (bytes >= (std::int64_t{1} << 30) && bytes % (std::int64_t{1} << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string join_files(const std::vector<std::filesystem::path>& files) {
  std::string out;
  for (const auto& file : files) out += (out.empty() ? "" : ", ") + file.string();
  return out;
}

// Reads one claim's numbers; every missing piece is a UserError naming the claim.
class Measurer {
 public:
  Measurer(const Claim& claim, const std::string& spec_source, const std::vector<std::filesystem::path>& files)
      : claim_(claim), prefix_(fmt::format("{}: claim '{}'", spec_source, claim.name)), files_(files) {}

  // The file holding /runs/<id>; exactly one of the files must.
  std::filesystem::path file_of_run(const std::string& id) const {
    std::optional<std::filesystem::path> found;
    for (const auto& file : files_) {
      if (!io::has_object(file, "/runs/" + id)) continue;
      SB_USER_CHECK(!found, "{}: run '{}' is in both {} and {}; give validate only one of them", prefix_, id,
                    found->string(), file.string());
      found = file;
    }
    SB_USER_CHECK(found.has_value(), "{}: no run '{}' in {}", prefix_, id, join_files(files_));
    return *found;
  }

  // A summary figure of a run, or NaN (with `note` set) when the run did not end "ok".
  double summary(const std::string& id, const std::string& field, std::string& note) const {
    const auto file = file_of_run(id);
    const std::string run = "/runs/" + id;
    const std::string status = io::read_string_attribute(file, run, "status");
    if (status != "ok") {
      note = fmt::format("run '{}' ended '{}'", id, status);
      return kNaN;
    }
    SB_USER_CHECK(io::has_object(file, run + "/summary"), "{}: run '{}' in {} has no summary", prefix_, id,
                  file.string());
    double value = 0;
    try {
      value = io::read_number_attribute(file, run + "/summary", field);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: {}", prefix_, e.what()));
    }
    SB_USER_CHECK(std::isfinite(value), "{}: run '{}' in {} has no {} (summary.{} is {})", prefix_, id,
                  file.string(), field, field, value);
    return value;
  }

  double world_size(const std::string& id) const {
    return io::read_number_attribute(file_of_run(id), "/runs/" + id, "world_size");
  }

  // The largest busbw among the rows of the claim's collective, size, ranks and path.
  double busbw() const {
    const std::string table = "/calibration/" + claim_.collective;
    double best = kNaN;
    bool any_table = false;
    for (const auto& file : files_) {
      if (!io::has_object(file, table)) continue;
      any_table = true;
      const auto size = io::read_column(file, table, "size_bytes");
      const auto ranks = io::read_column(file, table, "ranks");
      const auto path = io::read_string_column(file, table, "path");
      const auto bw = io::read_column(file, table, "busbw_gbps");
      for (std::size_t i = 0; i < size.size(); ++i)
        if (size[i] == static_cast<double>(claim_.size_bytes) && ranks[i] == static_cast<double>(claim_.ranks) &&
            path[i] == claim_.path && !(bw[i] <= best))
          best = bw[i];
    }
    SB_USER_CHECK(any_table, "{}: no {} table in {} (scalebench calibrate writes it)", prefix_, table,
                  join_files(files_));
    SB_USER_CHECK(!std::isnan(best), "{}: {} has no row of {} on {} ranks through path '{}' in {}", prefix_, table,
                  format_bytes(claim_.size_bytes), claim_.ranks, claim_.path, join_files(files_));
    return best;
  }

  // The largest tflops among /calibration/gemm rows of the claim's precision (and shape, path).
  double gemm_tflops() const {
    const std::string table = "/calibration/gemm";
    double best = kNaN;
    bool any_table = false;
    for (const auto& file : files_) {
      if (!io::has_object(file, table)) continue;
      any_table = true;
      const auto precision = io::read_string_column(file, table, "precision");
      const auto path = io::read_string_column(file, table, "path");
      const auto m = io::read_column(file, table, "m");
      const auto n = io::read_column(file, table, "n");
      const auto k = io::read_column(file, table, "k");
      const auto tflops = io::read_column(file, table, "tflops");
      const auto matches = [](std::int64_t wanted, double got) { return wanted == 0 || got == static_cast<double>(wanted); };
      for (std::size_t i = 0; i < tflops.size(); ++i)
        if (precision[i] == claim_.precision && (claim_.path.empty() || path[i] == claim_.path) &&
            matches(claim_.m, m[i]) && matches(claim_.n, n[i]) && matches(claim_.k, k[i]) && !(tflops[i] <= best))
          best = tflops[i];
    }
    SB_USER_CHECK(any_table, "{}: no {} table in {}", prefix_, table, join_files(files_));
    SB_USER_CHECK(!std::isnan(best), "{}: {} has no {} row{}{} in {}", prefix_, table, claim_.precision,
                  claim_.m || claim_.n || claim_.k ? fmt::format(" of shape m={} n={} k={}", claim_.m, claim_.n, claim_.k) : "",
                  claim_.path.empty() ? "" : fmt::format(" through path '{}'", claim_.path), join_files(files_));
    return best;
  }

 private:
  const Claim& claim_;
  std::string prefix_;
  const std::vector<std::filesystem::path>& files_;
};

std::string number(double x) { return fmt::format("{:.4g}", x); }

void judge(const Claim& claim, Verdict& verdict) {
  const double x = verdict.measured;
  switch (claim.tolerance) {
    case Tolerance::at_least:
      verdict.requirement = ">= " + number(claim.bound);
      verdict.threshold = claim.bound;
      verdict.tolerance_pct = std::numeric_limits<double>::quiet_NaN();
      verdict.pass = x >= claim.bound;
      break;
    case Tolerance::at_least_pct: {
      const double floor = *claim.claimed * claim.bound / 100;
      verdict.requirement = fmt::format(">= {} ({}% of {})", number(floor), number(claim.bound), number(*claim.claimed));
      verdict.threshold = floor;
      verdict.tolerance_pct = std::numeric_limits<double>::quiet_NaN();
      verdict.pass = x >= floor;
      break;
    }
    case Tolerance::within_pct:
      verdict.requirement = fmt::format("{} ± {}%", number(*claim.claimed), number(claim.bound));
      verdict.threshold = *claim.claimed;
      verdict.tolerance_pct = claim.bound;
      verdict.pass = std::abs(x - *claim.claimed) <= *claim.claimed * claim.bound / 100;
      break;
  }
  if (std::isnan(x)) verdict.pass = false;
}

// The measurement of one claim into v (what, unit, measured, note); UserError when it is missing.
void take_measurement(const Claim& claim, const Measurer& read, Verdict& v) {
  switch (claim.measure) {
    case Measure::gemm_tflops:
      v.what = fmt::format("GEMM {}{}", claim.precision,
                           claim.m || claim.n || claim.k ? fmt::format(" {}x{}x{}", claim.m, claim.n, claim.k) : "");
      v.unit = "TFLOP/s";
      v.measured = read.gemm_tflops();
      break;
    case Measure::busbw_gbps:
      v.what = fmt::format("{} {} on {} ranks ({})", claim.collective, format_bytes(claim.size_bytes), claim.ranks,
                           claim.path);
      v.unit = "GB/s";
      v.measured = read.busbw();
      break;
    case Measure::tokens_per_s:
      v.what = claim.run + " throughput";
      v.unit = "tokens/s";
      v.measured = read.summary(claim.run, "tokens_per_s", v.note);
      break;
    case Measure::samples_per_s:
      v.what = claim.run + " throughput";
      v.unit = "samples/s";
      v.measured = read.summary(claim.run, "samples_per_s", v.note);
      break;
    case Measure::mfu:
      v.what = claim.run + " MFU";
      v.measured = read.summary(claim.run, "mfu", v.note);
      break;
    case Measure::scaling_efficiency: {
      v.what = fmt::format("{} over {}", claim.scaled, claim.base);
      const double base = read.summary(claim.base, "samples_per_s", v.note);
      const double scaled = read.summary(claim.scaled, "samples_per_s", v.note);
      v.measured = (scaled / read.world_size(claim.scaled)) / (base / read.world_size(claim.base));
      break;
    }
  }
}

}  // namespace

std::vector<Verdict> judge_claims(const Spec& spec, const std::string& spec_source,
                                  const std::vector<std::filesystem::path>& files) {
  for (const auto& file : files) io::list_runs(file);  // a file that is not a result file fails first
  std::vector<Verdict> verdicts;
  for (const Claim& claim : spec.claims) {
    const Measurer read(claim, spec_source, files);
    Verdict v;
    v.claim = claim.name;
    try {
      take_measurement(claim, read, v);
    } catch (const UserError& e) {  // judged "missing"; the other claims still are
      v.measured = std::numeric_limits<double>::quiet_NaN();
      v.missing = true;
      v.note = e.what();
    }
    judge(claim, v);
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

}  // namespace sb::validate
