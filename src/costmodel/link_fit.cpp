// SPDX-License-Identifier: Apache-2.0
// α from the small messages, β as a median rate over the large ones (link_fit.hpp).
#include "costmodel/link_fit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.hpp"
#include "core/statistics.hpp"

namespace sb::costmodel {

LinkFit fit_link(std::vector<std::pair<double, double>> points) {
  SB_USER_CHECK(points.size() >= 4, "calibrate: the ping-pong gave {} sizes; at least 4 are needed", points.size());
  std::sort(points.begin(), points.end());
  LinkFit fit;
  // α: the fastest of the small messages (up to 4 KiB, at least the smallest), so that one
  // small size a busy neighbour delayed does not set it
  constexpr double kSmall = 4096, kLarge = 1 << 20;
  fit.alpha = points.front().second;
  for (const auto& [bytes, seconds] : points)
    if (bytes <= kSmall) fit.alpha = std::min(fit.alpha, seconds);
  std::vector<double> rates;
  for (const auto& [bytes, seconds] : points)
    if (bytes >= kLarge && seconds > fit.alpha) rates.push_back(bytes / (seconds - fit.alpha));
  SB_USER_CHECK(rates.size() >= 2, "calibrate: the ping-pong needs two sizes of 1 MiB or more, slower than its "
                "smallest message; it has {}", rates.size());
  fit.beta = median(rates);
  fit.from = fmt::format("fastest message of up to 4 KiB one way {:.3g} us; median bandwidth of {} sizes of 1 to {:.0f} MiB",
                         fit.alpha * 1e6, rates.size(), points.back().first / kLarge);
  return fit;
}

ReductionFit fit_reduction(std::vector<std::pair<double, double>> points, int n, const LinkFit& link) {
  SB_CHECK(n >= 2 && link.beta > 0, "a reduction fit over {} ranks, link bandwidth {}", n, link.beta);
  constexpr double kLarge = 1 << 20;
  const double moved = 2.0 * (n - 1) / n, reduced = static_cast<double>(n - 1) / n;
  std::vector<double> per_byte;
  for (const auto& [bytes, seconds] : points)
    if (bytes >= kLarge)
      per_byte.push_back((seconds - 2.0 * (n - 1) * link.alpha - moved * bytes / link.beta) / (reduced * bytes));
  SB_USER_CHECK(per_byte.size() >= 2, "calibrate: the all-reduce needs two sizes of 1 MiB or more; it has {}",
                per_byte.size());
  ReductionFit fit;
  fit.gamma = std::max(0.0, median(per_byte));
  fit.from = fmt::format("ring all-reduce over {} ranks beyond its moves at α/β: median of {} sizes of 1 to {:.0f} MiB, "
                         "{:.3g} GB/s reduced", n, per_byte.size(), std::max_element(points.begin(), points.end())->first / kLarge,
                         fit.gamma > 0 ? 1e-9 / fit.gamma : 0.0);
  return fit;
}

}  // namespace sb::costmodel
