// SPDX-License-Identifier: Apache-2.0
// Kernel-time table: lookup, interpolation, CSV.
#include "costmodel/kernel_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/bounded_file.hpp"
#include "core/check.hpp"

namespace sb::costmodel {

void KernelProfile::add(KernelTime time) {
  SB_CHECK(time.seconds > 0 && time.size > 0 && time.devices >= 1 && time.ranks >= 1,
           "kernel time {} {} {}x{}: seconds {} size {}", time.kernel, time.precision, time.devices, time.ranks,
           time.seconds, time.size);
  times_.push_back(std::move(time));
  const KernelTime& t = times_.back();
  std::vector<std::size_t>& rows = by_kernel_[{t.kernel, t.precision, t.devices, t.ranks}];
  const auto after = std::upper_bound(rows.begin(), rows.end(), t.size,
                                      [&](double size, std::size_t i) { return size < times_[i].size; });
  rows.insert(after, times_.size() - 1);  // sorted by size, equal sizes in the order added
}

bool KernelProfile::covers(const std::string& precision, int devices, int ranks) const {
  return std::any_of(by_kernel_.begin(), by_kernel_.end(), [&](const auto& entry) {
    return std::get<1>(entry.first) == precision && std::get<2>(entry.first) == devices &&
           std::get<3>(entry.first) == ranks;
  });
}

std::optional<double> KernelProfile::seconds(const KernelCall& call, const std::string& precision,
                                             int devices, int ranks) const {
  const auto found = by_kernel_.find({call.kernel, precision, devices, ranks});
  if (found == by_kernel_.end() || found->second.empty()) return std::nullopt;
  const std::vector<std::size_t>& rows = found->second;
  for (std::size_t i : rows)
    if (times_[i].shape == call.shape) return times_[i].seconds;
  // the nearest timed sizes below and above; beyond the ends, time in proportion to size
  const auto above = std::lower_bound(rows.begin(), rows.end(), call.size,
                                      [&](std::size_t i, double size) { return times_[i].size < size; });
  if (above == rows.begin()) return times_[*above].seconds * call.size / times_[*above].size;
  if (above == rows.end()) return times_[rows.back()].seconds * call.size / times_[rows.back()].size;
  const KernelTime& lo = times_[*(above - 1)];
  const KernelTime& hi = times_[*above];
  if (hi.size == lo.size) return 0.5 * (lo.seconds + hi.seconds) * call.size / lo.size;
  const double w = std::log(call.size / lo.size) / std::log(hi.size / lo.size);
  return std::exp((1.0 - w) * std::log(lo.seconds) + w * std::log(hi.seconds));
}

namespace {
// Tables calibrated before the calls were recorded from the models keyed the two vocabulary-
// parallel kernels with a vocab_begin placeholder in front: (V, BT, V) for today's (BT, V).
void upgrade_legacy_shape(KernelTime& t) {
  if ((t.kernel == "crossentropy_shard_partials" || t.kernel == "crossentropy_shard_backward") && t.shape.size() == 3)
    t.shape.erase(t.shape.begin());
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}
}  // namespace

KernelProfile KernelProfile::load(const std::filesystem::path& file) {
  // calibrate writes about 0.5 MB; 64 MiB leaves room for any sweep and none for an endless file
  constexpr std::uintmax_t kMaxTableBytes = std::uintmax_t{64} << 20;
  std::istringstream in(read_bounded_file(file, "kernel-time table", kMaxTableBytes));
  KernelProfile profile;
  std::string line;
  int number = 0;
  const std::string header = "kernel,precision,devices,ranks,shape,size,seconds";
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (line == header) continue;
    const std::vector<std::string> f = split(line, ',');
    KernelTime t;
    try {
      SB_USER_CHECK(f.size() == 7, "7 fields");
      t.kernel = f[0];
      t.precision = f[1];
      t.devices = std::stoi(f[2]);
      t.ranks = std::stoi(f[3]);
      for (const std::string& n : split(f[4], 'x')) t.shape.push_back(std::stoll(n));
      t.size = std::stod(f[5]);
      t.seconds = std::stod(f[6]);
    } catch (const std::exception&) {
      SB_USER_CHECK(false, "{}:{}: expected '{}', got '{}'", file.string(), number, header, line);
    }
    SB_USER_CHECK(!t.kernel.empty() && !t.shape.empty() && t.devices >= 1 && t.ranks >= 1 && t.size > 0 &&
                      t.seconds > 0 && std::isfinite(t.size) && std::isfinite(t.seconds),
                  "{}:{}: a kernel time needs a kernel, a shape, devices and ranks >= 1 and positive size and seconds, "
                  "got '{}'",
                  file.string(), number, line);
    upgrade_legacy_shape(t);
    profile.add(std::move(t));
  }
  SB_USER_CHECK(!profile.times_.empty(), "the kernel-time table '{}' holds no times", file.string());
  return profile;
}

void KernelProfile::save(const std::filesystem::path& file) const {
  std::ofstream out(file);
  SB_USER_CHECK(out.good(), "cannot write the kernel-time table '{}'", file.string());
  out << "kernel,precision,devices,ranks,shape,size,seconds\n";
  for (const KernelTime& t : times_)
    out << fmt::format("{},{},{},{},{},{:.6g},{:.6g}\n", t.kernel, t.precision, t.devices, t.ranks,
                       fmt::join(t.shape, "x"), t.size, t.seconds);
  SB_USER_CHECK(out.good(), "writing the kernel-time table '{}' failed", file.string());
}

}  // namespace sb::costmodel
