// A site's measured kernel times (`calibrate` writes them, a CSV file beside the site profile):
// seconds per call of each trainer kernel, per precision and devices per rank (threads on a CPU
// site), at the shapes the calibration timed. A call at a timed shape takes the measured time;
// another shape of a timed kernel is interpolated on its size (FLOPs or elements) in log-log
// between the two nearest timed sizes, and scaled in proportion beyond them. Leaves out which
// calls a model makes (kernel_calls.hpp) and how they are timed (cli/kernel_benchmark.cpp).
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
  std::vector<std::int64_t> shape;
  double size = 0;
  double seconds = 0;
};

class KernelProfile {
 public:
  void add(KernelTime time);
  // The call's seconds, or nothing when the kernel was not timed for this precision and devices.
  std::optional<double> seconds(const KernelCall& call, const std::string& precision, int devices) const;
  // Whether any kernel was timed for this precision and devices.
  bool covers(const std::string& precision, int devices) const;
  const std::vector<KernelTime>& times() const { return times_; }

  // CSV: kernel,precision,devices,shape,size,seconds; shape as "2x64x192". UserError naming the
  // file and line on anything else.
  static KernelProfile load(const std::filesystem::path& file);
  void save(const std::filesystem::path& file) const;

 private:
  using Key = std::tuple<std::string, std::string, int>;  // kernel, precision, devices
  std::vector<KernelTime> times_;
  std::map<Key, std::vector<std::size_t>> by_kernel_;  // indices into times_, sorted by size
};

}  // namespace sb::costmodel
