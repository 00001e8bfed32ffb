// SPDX-License-Identifier: Apache-2.0
// Shapes, strides and typed access checks.
#include <gtest/gtest.h>

#include "core/tensor.hpp"

namespace sb {
namespace {

TEST(Tensor, ContiguousStridesAndNumel) {
  float storage[2 * 3 * 4];
  Tensor t(storage, Shape{2, 3, 4}, DType::f32);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.bytes(), 96);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.stride(1), 4);
  EXPECT_EQ(t.stride(2), 1);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.shape().str(), "(2, 3, 4)");
  EXPECT_EQ(t.data<float>(), storage);
}

TEST(Tensor, WrongTypedAccessAndNegativeDimsAreErrors) {
  float storage[4];
  Tensor t(storage, Shape{4}, DType::f32);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW((Shape{2, -1}), Error);
}

TEST(Tensor, TransposedViewIsNotContiguous) {
  float storage[6];
  Tensor t(storage, Shape{3, 2}, {1, 3, 0, 0, 0, 0}, DType::f32, Device::cpu);
  EXPECT_FALSE(t.is_contiguous());
}

}  // namespace
}  // namespace sb
