// SPDX-License-Identifier: Apache-2.0
// The α-β model of one link (one-way time = α + bytes / β) fitted to ping-pong measurements,
// for `calibrate` (calibrate/calibrate_site.cpp) to write into a site profile. Leaves out reading
// the measurements (the caller passes them) and the collectives' algorithms built on α and β
// (closed_forms.hpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sb::costmodel {

struct LinkFit {
  double alpha = 0;  // seconds, one way
  double beta = 0;   // bytes per second
  std::string from;  // how the two were read off the points, for the profile's comment
};

// points: (message bytes, ONE-WAY seconds), any order, at least 4 sizes, two of them of 1 MiB or
// more. α is the shortest time of the messages up to 4 KiB; β the median over the messages of
// 1 MiB and up of bytes / (time − α); both robust to one size a neighbour's burst slowed.
// Throws UserError naming what is missing.
LinkFit fit_link(std::vector<std::pair<double, double>> points);

}  // namespace sb::costmodel
