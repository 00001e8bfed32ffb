// SPDX-License-Identifier: Apache-2.0
// The α-β link fit calibrate writes into site profiles: it reads α and β back from exact
// one-way times, keeps one-way times one way, resists one slowed round, and names what is
// missing; and the all-reduce's γ read back from exact ring times.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "costmodel/link_fit.hpp"

namespace sb::costmodel {
namespace {

// One-way times α + bytes/β for 4 B .. 16 MiB, powers of 4, in shuffled order.
std::vector<std::pair<double, double>> exact_points(double alpha, double beta) {
  std::vector<std::pair<double, double>> points;
  for (double bytes = 4; bytes <= 16 * 1048576.0; bytes *= 4) points.push_back({bytes, alpha + bytes / beta});
  std::swap(points.front(), points.back());
  return points;
}

TEST(LinkFit, RecoversAlphaAndBetaFromExactOneWayTimes) {
  const LinkFit fit = fit_link(exact_points(0.37e-6, 10.1e9));
  // α is the smallest message's time: 4 bytes at 10 GB/s add 0.4 ns to it
  EXPECT_NEAR(fit.alpha, 0.37e-6 + 4 / 10.1e9, 1e-15);
  // β from (time − α) of the large messages: exact up to the 4-byte part of α
  EXPECT_NEAR(fit.beta / 10.1e9, 1.0, 1e-6);
  EXPECT_NE(fit.from.find("one way 0.37 us"), std::string::npos) << fit.from;
}

TEST(LinkFit, OneWayTimesAreNotHalvedAgain) {
  // A fit that halved the times it is given (as a round-trip reader would) reports α/2 and 2β.
  const LinkFit fit = fit_link(exact_points(2e-6, 5e9));
  EXPECT_GT(fit.alpha, 1.9e-6);
  EXPECT_LT(fit.beta, 5.1e9);
}

TEST(LinkFit, OneSlowRoundDoesNotMoveBeta) {
  auto points = exact_points(1e-6, 8e9);
  for (auto& [bytes, seconds] : points)
    if (bytes == 4 * 1048576.0) seconds *= 3;  // a neighbour's burst
  EXPECT_NEAR(fit_link(points).beta / 8e9, 1.0, 1e-3);
}

TEST(LinkFit, OneSlowSmallMessageDoesNotSetAlpha) {
  auto points = exact_points(1e-6, 8e9);
  for (auto& [bytes, seconds] : points)
    if (bytes == 4) seconds = 5e-3;  // slower than the 16 MiB message: no rate would be left
  const LinkFit fit = fit_link(points);
  EXPECT_NEAR(fit.alpha, 1e-6 + 16 / 8e9, 1e-15);  // the 16-byte message's time
  EXPECT_NEAR(fit.beta / 8e9, 1.0, 1e-5);
}

// Ring all-reduce times over n ranks built from α, β and γ: the fit returns γ, whatever α's
// share; a slowed size does not move the median; below two sizes of 1 MiB it refuses.
TEST(ReductionFit, RecoversGammaFromExactRingTimes) {
  const LinkFit link{0.5e-6, 18e9, ""};
  for (int n : {2, 4}) {
    std::vector<std::pair<double, double>> points;
    for (double bytes = 4096; bytes <= 16 * 1048576.0; bytes *= 2)
      points.push_back({bytes, 2.0 * (n - 1) * link.alpha + 2.0 * (n - 1) / n * bytes / link.beta +
                                   (n - 1.0) / n * bytes * 0.2e-9});
    points[points.size() - 2].second *= 3;  // one slowed size
    const ReductionFit fit = fit_reduction(points, n, link);
    EXPECT_NEAR(fit.gamma / 0.2e-9, 1.0, 1e-9) << n << " ranks";
    EXPECT_NE(fit.from.find("5 GB/s reduced"), std::string::npos) << fit.from;
  }
  // a reduction faster than the moves alone leaves γ at 0
  EXPECT_EQ(fit_reduction({{1 << 20, 1e-6}, {1 << 21, 2e-6}}, 2, link).gamma, 0.0);
  EXPECT_THROW(fit_reduction({{4096, 1e-6}, {1 << 20, 1e-4}}, 2, link), UserError);
}

TEST(LinkFit, TooFewSizesIsAUserError) {
  EXPECT_THROW(fit_link({{4, 1e-6}, {1 << 20, 1e-4}, {1 << 22, 4e-4}}), UserError);
  // four sizes but only one of 1 MiB or more
  EXPECT_THROW(fit_link({{4, 1e-6}, {64, 1e-6}, {1024, 2e-6}, {1 << 20, 1e-4}}), UserError);
}

}  // namespace
}  // namespace sb::costmodel
