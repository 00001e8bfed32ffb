// SPDX-License-Identifier: Apache-2.0
// Dense against sparse inference of a pruned resnet (see sparse_inference.hpp).
#include "compress/sparse_inference.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "compress/sparse_resnet.hpp"
#include "core/check.hpp"
#include "core/statistics.hpp"

namespace sb::compress {

namespace {

using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

// Images per second of one pass of logits_of over the set's images.
template <class Logits>
double samples_per_s(const ImageSet& set, i64 batch, Logits logits_of) {
  const auto start = Clock::now();
  for (i64 first = 0; first < set.count; first += batch)
    logits_of(set.images + first * set.image_size, std::min(batch, set.count - first));
  return static_cast<double>(set.count) / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

SparseInferenceReport sparse_resnet_inference(resnet::ResnetModel& model, const StoredWeights& stored,
                                              const ImageSet& test, i64 rounds, i64 timing_images) {
  SB_CHECK(test.count >= 1 && rounds >= 1 && timing_images >= 1, "sparse_resnet_inference: no data or rounds");
  const i64 batch = model.max_batch(), classes = model.config().classes;
  SparseResnet sparse(model, stored, batch, model.backend());
  const auto dense_logits = [&](const float* x, i64 N) {
    model.forward(x, nullptr, N, false);
    return model.logits();
  };
  const auto sparse_logits = [&](const float* x, i64 N) { return sparse.forward(x, N); };

  SparseInferenceReport r;
  r.weight_bytes_dense = stored.dense_bytes();
  r.weight_bytes_sparse = stored.bytes();
  r.layouts = stored.layout_counts();
  r.nonzeros = sparse.nonzeros();
  r.accuracy_dense = top1_accuracy(test, batch, classes, dense_logits);
  r.accuracy_sparse = top1_accuracy(test, batch, classes, sparse_logits);
  ImageSet timed = test;
  timed.count = std::min(test.count, timing_images);
  std::vector<double> dense_rates, sparse_rates;
  for (i64 round = 0; round < rounds; ++round) {
    if (round % 2 == 0) dense_rates.push_back(samples_per_s(timed, batch, dense_logits));
    sparse_rates.push_back(samples_per_s(timed, batch, sparse_logits));
    if (round % 2 == 1) dense_rates.push_back(samples_per_s(timed, batch, dense_logits));
  }
  r.samples_per_s_dense = median(dense_rates);
  r.samples_per_s_sparse = median(sparse_rates);
  r.timing_rounds = rounds;
  r.timing_images = timed.count;
  return r;
}

}  // namespace sb::compress
