// SPDX-License-Identifier: Apache-2.0
// Sparse inference of a pruned resnet against its dense inference, end to end: the stored
// weights' bytes against dense fp32, top-1 accuracy of both on the whole test set, and the
// throughput of both in alternating timed rounds (dense first in even rounds, sparse first in
// odd, so drift in the machine's load falls on both). What `scalebench train` runs after a
// pruned resnet run, and what the tests check. Leaves out storing (sparse_storage.hpp) and
// writing results (train/).
#pragma once

#include <cstdint>
#include <string>

#include "compress/image_accuracy.hpp"
#include "compress/sparse_storage.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::compress {

struct SparseInferenceReport {
  std::int64_t weight_bytes_dense = 0;   // 4 · parameters
  std::int64_t weight_bytes_sparse = 0;  // as stored
  std::string layouts;                   // StoredWeights::layout_counts
  std::int64_t nonzeros = 0;             // of the folded CSR weight matrices inference runs
  double accuracy_dense = 0, accuracy_sparse = 0;  // the whole test set
  double samples_per_s_dense = 0, samples_per_s_sparse = 0;  // median over the rounds
  std::int64_t timing_rounds = 0, timing_images = 0;          // images per pass
};

// model: pruned fp32 resnet, whole network, host back-end; stored: store_weights of its
// parameters. Batches of model.max_batch(); each timed pass runs the first timing_images test
// images (all when fewer), `rounds` >= 1 passes of each.
SparseInferenceReport sparse_resnet_inference(resnet::ResnetModel& model, const StoredWeights& stored,
                                              const ImageSet& test, std::int64_t rounds, std::int64_t timing_images);

}  // namespace sb::compress
