// SPDX-License-Identifier: Apache-2.0
// The sparse inference kernel: the reference CSR product equals the dense product of the same
// matrix (written out here, double sums) and the cpu kernel equals the reference, over shapes
// that are not multiples of the 8-wide vector (P 1, 7, 29, 785), with empty rows, a fully
// dense row, a matrix of nothing else, and with and without bias. Leaves out the layers that call it
// (tests/compress/test_sparse_resnet.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "kernels/sparse_kernels.hpp"

namespace sb::kernels::testing {
namespace {

// (rows, cols) with about `density` of the entries nonzero; row 0 empty, row 1 full.
std::vector<float> sparse_dense(i64 rows, i64 cols, double density, std::uint64_t stream) {
  const CounterRng rng(7, stream);
  std::vector<float> w(static_cast<std::size_t>(rows * cols), 0.0f);
  for (i64 i = 0; i < rows * cols; ++i) {
    const i64 r = i / cols;
    const bool kept = r == 1 || (r != 0 && rng.uniform(2 * i) < density);
    if (kept) w[static_cast<std::size_t>(i)] = static_cast<float>(rng.normal(2 * i + 1));
  }
  return w;
}

struct Csr {
  std::vector<std::int32_t> row_start{0}, col;
  std::vector<float> values;
};
Csr csr_of(const std::vector<float>& w, i64 rows, i64 cols) {
  Csr m;
  for (i64 r = 0; r < rows; ++r) {
    for (i64 c = 0; c < cols; ++c)
      if (w[static_cast<std::size_t>(r * cols + c)] != 0.0f) {
        m.col.push_back(static_cast<std::int32_t>(c));
        m.values.push_back(w[static_cast<std::size_t>(r * cols + c)]);
      }
    m.row_start.push_back(static_cast<std::int32_t>(m.values.size()));
  }
  return m;
}

struct Shape {
  i64 OC, K, P;
  double density;
};

class CsrMatmul : public ::testing::TestWithParam<Shape> {};

TEST_P(CsrMatmul, ReferenceIsTheDenseProductAndCpuIsTheReference) {
  const auto [OC, K, P, density] = GetParam();
  const std::vector<float> w = sparse_dense(OC, K, density, 1);
  const Csr m = csr_of(w, OC, K);
  const CounterRng rng(7, 2);
  std::vector<float> inp(static_cast<std::size_t>(K * P)), bias(static_cast<std::size_t>(OC));
  for (std::size_t i = 0; i < inp.size(); ++i) inp[i] = static_cast<float>(rng.normal(static_cast<i64>(i)));
  for (std::size_t o = 0; o < bias.size(); ++o) bias[o] = 0.1f * static_cast<float>(o) - 0.3f;
  for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
    std::vector<float> reference_out(static_cast<std::size_t>(OC * P), -1.0f), cpu_out = reference_out;
    reference::csr_matmul_forward(reference_out.data(), m.row_start.data(), m.col.data(), m.values.data(),
                                  inp.data(), b, OC, K, P);
    cpu::csr_matmul_forward(cpu_out.data(), m.row_start.data(), m.col.data(), m.values.data(), inp.data(), b, OC,
                            K, P);
    for (i64 o = 0; o < OC; ++o)
      for (i64 p = 0; p < P; ++p) {
        double dense = b ? b[o] : 0.0, magnitude = std::fabs(dense);
        for (i64 k = 0; k < K; ++k) {
          dense += static_cast<double>(w[static_cast<std::size_t>(o * K + k)]) * inp[static_cast<std::size_t>(k * P + p)];
          magnitude += std::fabs(w[static_cast<std::size_t>(o * K + k)] * inp[static_cast<std::size_t>(k * P + p)]);
        }
        const auto i = static_cast<std::size_t>(o * P + p);
        const double tolerance = 1e-6 * magnitude + 1e-7;  // float sums of at most K terms
        ASSERT_NEAR(reference_out[i], dense, tolerance) << "reference at (" << o << ", " << p << ")";
        ASSERT_NEAR(cpu_out[i], reference_out[i], tolerance) << "cpu at (" << o << ", " << p << ")";
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AwkwardShapes, CsrMatmul,
                         ::testing::Values(Shape{3, 5, 1, 0.5}, Shape{7, 13, 29, 0.3}, Shape{16, 144, 785, 0.1},
                                           Shape{10, 64, 7, 0.9}, Shape{5, 9, 49, 0.0}));

TEST(CsrMatmulTable, CpuAndReferenceAreListedAndCudaRefusesByName) {
  EXPECT_EQ(sparse_kernels_for(Backend::cpu).csr_matmul_forward, &cpu::csr_matmul_forward);
  EXPECT_EQ(sparse_kernels_for(Backend::reference).csr_matmul_forward, &reference::csr_matmul_forward);
  EXPECT_THROW(sparse_kernels_for(Backend::cuda), sb::UserError);
}

}  // namespace
}  // namespace sb::kernels::testing
