// SPDX-License-Identifier: Apache-2.0
// A site's measured kernel times (`calibrate` writes them, a CSV file beside the site profile):
// seconds per call of each trainer kernel, per precision, devices per rank (threads on a CPU
// site) and ranks timed at once on a node (1: alone; more: every rank's cores busy, as in a
// data-parallel run that fills the node), at the shapes the calibration timed. A call at a timed shape takes the measured time;
// another shape of a timed kernel is interpolated on its size (FLOPs or elements) in log-log
// between the two nearest timed sizes, and scaled in proportion beyond them. Leaves out which
// calls a model makes (kernel_calls.hpp) and how they are timed (calibrate/kernel_benchmark.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "costmodel/kernel_calls.hpp"

namespace sb::costmodel {

struct KernelTime {
  std::string kernel, precision;
  int devices = 1;
  int ranks = 1;  // copies timed at once on the node
  std::vector<std::int64_t> shape;
  double size = 0;
  double seconds = 0;
};

class KernelProfile {
 public:
  void add(KernelTime time);
  // The call's seconds, or nothing when the kernel was not timed for this precision, devices
  // and ranks.
  std::optional<double> seconds(const KernelCall& call, const std::string& precision, int devices,
                                int ranks = 1) const;
  // Whether any kernel was timed for this precision, devices and ranks.
  bool covers(const std::string& precision, int devices, int ranks = 1) const;
  const std::vector<KernelTime>& times() const { return times_; }

  // CSV: kernel,precision,devices,ranks,shape,size,seconds; shape as "2x64x192" (KernelCall's
  // shape). UserError naming the file and line on anything else.
  static KernelProfile load(const std::filesystem::path& file);
  void save(const std::filesystem::path& file) const;

 private:
  using Key = std::tuple<std::string, std::string, int, int>;  // kernel, precision, devices, ranks
  std::vector<KernelTime> times_;
  std::map<Key, std::vector<std::size_t>> by_kernel_;  // indices into times_, sorted by size
};

}  // namespace sb::costmodel
