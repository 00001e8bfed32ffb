// SPDX-License-Identifier: Apache-2.0
// Reference squared L2 norm (for gradient clipping) and in-place scaling.
// Leaves out threading; the sum runs left to right in double.
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

template <class T>
SB_DECLARE_SQUARED_NORM(T, T) {
  double sum = 0;
  for (i64 i = 0; i < N; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return sum;
}

template <class T>
SB_DECLARE_SCALE_INPLACE(T, T) {
  for (i64 i = 0; i < N; ++i) x[i] = static_cast<T>(x[i] * factor);
}

template SB_DECLARE_SQUARED_NORM(float, float);
template SB_DECLARE_SQUARED_NORM(double, double);
template SB_DECLARE_SCALE_INPLACE(float, float);
template SB_DECLARE_SCALE_INPLACE(double, double);

}  // namespace sb::kernels::reference
