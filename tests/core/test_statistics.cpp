// core/statistics.hpp: the median the trainer, the result reader and calibrate share.
#include <gtest/gtest.h>

#include <cmath>

#include "core/statistics.hpp"

namespace sb {
namespace {

TEST(Median, OddCountIsTheMiddleValueEvenCountTheMeanOfTheTwo) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({7.0}), 7.0);
}

TEST(Median, NoValuesIsNaN) { EXPECT_TRUE(std::isnan(median({}))); }

}  // namespace
}  // namespace sb
