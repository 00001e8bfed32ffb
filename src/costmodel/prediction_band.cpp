// SPDX-License-Identifier: Apache-2.0
// The residual range of prediction_band.hpp.
#include "costmodel/prediction_band.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/install_paths.hpp"

namespace sb::costmodel {

std::optional<double> measured_over_predicted_time(const RowReplay& row) {
  if (!row.feasible) return std::nullopt;
  for (const FigureComparison& f : row.figures) {
    if (!time_figure(f.figure) || !f.predicted || !(*f.predicted > 0) || !(f.published > 0)) continue;
    return f.figure == "step_time_s" ? f.published / *f.predicted : *f.predicted / f.published;
  }
  return std::nullopt;
}

std::optional<PredictionBand> band_from_replays(const std::vector<ValidationReplay>& replays,
                                                const std::vector<std::string>& row_devices,
                                                const std::string& device, double step_time_s) {
  PredictionBand b;
  b.device = device;
  std::vector<std::string> sets;
  std::size_t k = 0;
  for (const ValidationReplay& replay : replays) {
    bool used = false;
    for (const RowReplay& row : replay.rows) {
      const bool same = k < row_devices.size() && row_devices[k] == device;
      ++k;
      if (!same) continue;
      const std::optional<double> ratio = measured_over_predicted_time(row);
      if (!ratio) continue;
      b.low_ratio = b.rows == 0 ? *ratio : std::min(b.low_ratio, *ratio);
      b.high_ratio = b.rows == 0 ? *ratio : std::max(b.high_ratio, *ratio);
      ++b.rows;
      used = true;
    }
    if (used) sets.push_back(fmt::format("{} version {}", replay.name, replay.version));
  }
  if (b.rows == 0) return std::nullopt;
  b.low_s = step_time_s * b.low_ratio;
  b.high_s = step_time_s * b.high_ratio;
  b.sets = fmt::format("{}", fmt::join(sets, ", "));
  b.method = fmt::format(
      "the step time times the smallest and largest measured/predicted step-time ratio ({:.3f}, {:.3f}) over the "
      "{} feasible rows on {} of {}, replayed on the shipped profiles (in-sample where a profile's e_max was "
      "fitted on that set)",
      b.low_ratio, b.high_ratio, b.rows, device, b.sets);
  return b;
}

std::optional<PredictionBand> prediction_band(const SiteProfile& site, double step_time_s, const std::string& kernels) {
  const std::filesystem::path folder = resource_dir() / "validation" / "published";
  if (!std::filesystem::is_directory(folder)) return std::nullopt;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<ValidationReplay> replays;
  std::vector<std::string> devices;
  for (const auto& file : files) {
    ValidationSet set = load_validation_set(file);
    std::erase_if(set.rows, [&](const ValidationRow& r) {
      return r.device != site.device || validation_case(set, r).model.kernels != kernels;
    });
    if (set.rows.empty()) continue;
    for (const ValidationRow& r : set.rows) devices.push_back(r.device);
    replays.push_back(replay_validation_set(set));
  }
  std::optional<PredictionBand> band = band_from_replays(replays, devices, site.device, step_time_s);
  if (band && kernels != "native")
    band->method += fmt::format(", the rows whose model.kernels is {}, as this case's", kernels);
  return band;
}

}  // namespace sb::costmodel
