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

// The α-β-γ model's γ (Thakur, Rabenseifner & Gropp 2005): seconds per byte a rank reduces, what
// a ring all-reduce costs beyond moving its bytes (reading both operands, adding, writing; on a
// node whose link is shared memory, as much as the moves). points: (buffer bytes S, seconds) of a
// ring all-reduce over n ranks; each point of 1 MiB or more gives
// (t − 2(n−1)·α − 2(n−1)/n·S/β) / ((n−1)/n·S), and γ is their median, at least 0. Throws UserError
// with fewer than two such points.
struct ReductionFit {
  double gamma = 0;
  std::string from;
};
ReductionFit fit_reduction(std::vector<std::pair<double, double>> points, int n, const LinkFit& link);

// points: (message bytes, ONE-WAY seconds), any order, at least 4 sizes, two of them of 1 MiB or
// more. α is the shortest time of the messages up to 4 KiB; β the median over the messages of
// 1 MiB and up of bytes / (time − α); both robust to one size a neighbour's burst slowed.
// Throws UserError naming what is missing.
LinkFit fit_link(std::vector<std::pair<double, double>> points);

}  // namespace sb::costmodel
