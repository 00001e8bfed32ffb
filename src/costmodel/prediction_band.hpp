// SPDX-License-Identifier: Apache-2.0
// A prediction's band: the interval its step time has on the evidence of the shipped validation
// sets (validation/published/*.yaml) replayed on the profiles of the same device, the "site
// family". Leaves out any statistical model: the band is the range the residuals span, no wider.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "costmodel/site_profile.hpp"
#include "costmodel/validation_set.hpp"

namespace sb::costmodel {

// Per replayed row, measured over predicted step time from the row's first published figure:
// step_time_s gives published / predicted; a rate (tokens_per_s, tflops_per_device, mfu_percent,
// ...) gives predicted / published; parameters says nothing of time. Infeasible rows give none.
std::optional<double> measured_over_predicted_time(const RowReplay& row);

struct PredictionBand {
  double low_s = 0, high_s = 0;          // the step time's interval
  double low_ratio = 1, high_ratio = 1;  // min and max over the rows of measured / predicted time
  int rows = 0;
  std::string device, sets;              // the family's device, the sets read (comma-separated)
  std::string method;                    // one sentence saying how, for the JSON and the HDF5 attrs
};

// The band of step_time_s from replays of sets: the rows on site.device. None without such a
// row (a CPU site, a device no published set covers).
std::optional<PredictionBand> band_from_replays(const std::vector<ValidationReplay>& replays,
                                                const std::vector<std::string>& row_devices,
                                                const std::string& device, double step_time_s);

// The same from the shipped sets (resource_dir()/validation/published), replayed on the shipped
// profiles of site.device's rows whose kernels (model.kernels) are the prediction's: a case on
// the device's own kernels takes its band from the rows run on them, an sm80 case from the sm80
// rows. The residuals are in-sample where a profile's e_max was fitted on that set (the method
// says which sets were read; validation/README.md names the fits).
std::optional<PredictionBand> prediction_band(const SiteProfile& site, double step_time_s,
                                              const std::string& kernels = "native");

}  // namespace sb::costmodel
