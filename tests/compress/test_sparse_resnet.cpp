// SPDX-License-Identifier: Apache-2.0
// Sparse inference of pruned resnet-mini: 90% global unstructured and 2:4 masks applied to a
// Kaiming-initialised model with non-trivial BatchNorm running statistics; the SparseResnet
// built from the stored weights gives the dense model's eval-mode logits (float rounding of the
// folded BatchNorm and the summation order only) and the same predictions, on the cpu and
// reference back-ends, for batches that are not the maximum and span two groups of unfolded images; the stored weights round-trip to the
// model's parameters and 90% sparsity stores over 3× smaller. Leaves out training
// (tests/cli/test_finetune_prune.cpp reads the pruned runs' figures from HDF5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "compress/magnitude_pruning.hpp"
#include "compress/sparse_resnet.hpp"
#include "compress/sparse_storage.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::compress {
namespace {

using i64 = std::int64_t;

struct PrunedResnet {
  MemoryTracker tracker;
  resnet::ResnetModel model;
  StoredWeights stored;

  // resnet-mini on `backend`, pruned by `pattern` (sparsity for unstructured).
  PrunedResnet(kernels::Backend backend, PruningPattern pattern, double sparsity)
      : model(resnet::resnet_config_by_name("resnet-mini"), 16, backend, tracker) {
    model.init_weights(5);
    const CounterRng rng(5, 1);
    i64 i = 0;
    for (const resnet::StatisticsView& v : model.statistics_views())
      for (i64 k = 0; k < v.numel; ++k, ++i)  // running means around 0, variances in [0.5, 1.5]
        v.values[k] = v.name.ends_with("running_var") ? 0.5f + rng.uniform(2 * i) : 0.3f * static_cast<float>(rng.normal(2 * i + 1));
    std::vector<WeightMatrix> matrices = weight_matrices();
    const auto keep = magnitude_masks(matrices, pattern, sparsity);
    for (std::size_t m = 0; m < matrices.size(); ++m)
      for (std::size_t e = 0; e < keep[m].size(); ++e)
        if (!keep[m][e]) const_cast<float*>(matrices[m].values)[e] = 0.0f;
    model.sync_storage_parameters();
    std::vector<NamedTensor> tensors;
    for (const resnet::ParameterView& v : model.parameter_views()) tensors.push_back({v.name, v.param, v.numel});
    stored = store_weights(tensors, weight_matrices());
  }

  std::vector<WeightMatrix> weight_matrices() {
    const auto specs = resnet::resnet_parameter_specs(model.config());
    const auto views = model.parameter_views();
    std::vector<WeightMatrix> matrices;
    for (std::size_t k = 0; k < specs.size(); ++k)
      if (specs[k].shape.rank() >= 2)
        matrices.push_back({views[k].name, views[k].param, specs[k].shape[0], views[k].numel / specs[k].shape[0]});
    return matrices;
  }
};

std::vector<float> random_images(i64 N) {
  const CounterRng rng(9, 2);
  std::vector<float> x(static_cast<std::size_t>(N * 28 * 28));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rng.normal(static_cast<i64>(i)));
  return x;
}

void expect_dense_logits(PrunedResnet& p, i64 N) {
  const std::vector<float> images = random_images(N);
  p.model.forward(images.data(), nullptr, N, false);
  const float* dense = p.model.logits();
  SparseResnet sparse(p.model, p.stored, p.model.max_batch(), p.model.backend());
  const float* logits = sparse.forward(images.data(), N);
  const i64 classes = p.model.config().classes;
  float largest = 0;
  for (i64 i = 0; i < N * classes; ++i) largest = std::max(largest, std::fabs(dense[i]));
  ASSERT_GT(largest, 0.0f);
  for (i64 n = 0; n < N; ++n) {
    for (i64 c = 0; c < classes; ++c)  // folded BatchNorm and CSR order: a few float roundings per layer
      EXPECT_NEAR(logits[n * classes + c], dense[n * classes + c], 1e-4f * largest) << "image " << n << " class " << c;
    const auto argmax = [&](const float* row) { return std::max_element(row, row + classes) - row; };
    EXPECT_EQ(argmax(logits + n * classes), argmax(dense + n * classes)) << "image " << n;
  }
}

TEST(SparseResnet, NinetyPercentPrunedGivesTheDenseLogitsOnCpu) {
  PrunedResnet p(kernels::Backend::cpu, PruningPattern::unstructured, 0.9);
  expect_dense_logits(p, 13);  // 28×28 layers unfold 10 images per product: a group of 10, then 3
}

TEST(SparseResnet, TwoOfFourGivesTheDenseLogitsOnTheReferenceBackend) {
  PrunedResnet p(kernels::Backend::reference, PruningPattern::two_of_four, 0);
  expect_dense_logits(p, 3);
  for (const StoredTensor& t : p.stored.tensors)  // every matrix with rows of groups of four
    if (t.rows > 1 && t.cols % 4 == 0) EXPECT_EQ(t.layout, SparseLayout::two_of_four) << t.name;
}

TEST(SparseResnet, StoredWeightsAreTheParametersAndNinetyPercentIsOverThreeTimesSmaller) {
  PrunedResnet p(kernels::Backend::cpu, PruningPattern::unstructured, 0.9);
  for (const resnet::ParameterView& v : p.model.parameter_views())
    EXPECT_EQ(p.stored.at(v.name).to_dense(), std::vector<float>(v.param, v.param + v.numel)) << v.name;
  EXPECT_EQ(p.stored.dense_bytes(), 4 * p.model.parameter_count());
  EXPECT_LT(3 * p.stored.bytes(), p.stored.dense_bytes()) << p.stored.layout_counts();
  SparseResnet sparse(p.model, p.stored, 16, kernels::Backend::cpu);
  const Sparsity s = sparsity_of(p.weight_matrices());
  EXPECT_EQ(sparse.nonzeros(), s.elements - s.zeros);
}

}  // namespace
}  // namespace sb::compress
