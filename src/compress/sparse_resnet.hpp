// SPDX-License-Identifier: Apache-2.0
// resnet-mini for sparse inference from its stored pruned weights: every BatchNorm folded
// (running statistics) into its convolution, which keeps each zero a zero, every convolution an
// im2col per image times the CSR weights (kernels/sparse_kernels.hpp csr_matmul_forward), the fc the CSR
// weights times the pooled features; ReLU, residual adds and the average pool as in the dense
// model. The same function as the dense model's eval forward up to float rounding. Leaves out
// training, bottleneck blocks and max-pool stems (spec-only resnets), and the GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compress/quantized_conv2d.hpp"
#include "compress/sparse_matrix.hpp"
#include "compress/sparse_storage.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::compress {

// Output pixels one CSR product covers: images are unfolded side by side until about this many
// columns, so that each kernel call (one parallel region) has enough work to share out; one
// region per image costs more in thread hand-offs than the image's work on a loaded machine.
inline constexpr std::int64_t kSparseColumnsPerCall = 8192;

// Host scratch of one convolution forward, sized for the largest layer.
struct SparseConvScratch {
  float* columns;  // (C·KH·KW, G·OH·OW)
  float* rows;     // (OC, G·OH·OW)
};

// One convolution with its BatchNorm folded: weight (OC, C·KH·KW) in CSR, bias (OC).
struct SparseConv2d {
  Conv2dShape shape;
  CsrMatrix weight;
  std::vector<float> bias;
  // Images per CSR product (G): kSparseColumnsPerCall columns, at least one image.
  std::int64_t images_per_call() const;
  // inp (N, C, H, W) -> out (N, OC, OH, OW).
  void forward(float* out, const float* inp, std::int64_t N, const SparseConvScratch& scratch,
               const kernels::SparseKernelTable& k) const;
};

// inp (C, H, W), one image -> columns (C·KH·KW rows of stride ld): row (c, kh, kw) holds that
// tap over every output pixel (OH·OW <= ld of them), zeros where it falls in the padding.
void im2col_rows(float* columns, std::int64_t ld, const float* inp, const Conv2dShape& s);

class SparseResnet {
 public:
  // model: fp32, the whole network, host back-end (its running statistics are read); stored:
  // its parameters as store_weights keeps them (the convolution and fc weights are decoded from
  // there, so inference runs what is stored). Batches up to max_batch.
  SparseResnet(resnet::ResnetModel& model, const StoredWeights& stored, std::int64_t max_batch,
               kernels::Backend backend);

  // images (N, C, H, W), N <= max_batch -> logits (N, classes), valid until the next forward.
  const float* forward(const float* images, std::int64_t N);

  std::int64_t nonzeros() const;  // over every CSR weight matrix
  std::int64_t max_batch() const { return max_batch_; }

 private:
  struct Block {
    SparseConv2d conv1, conv2;
    std::optional<SparseConv2d> shortcut;
  };

  resnet::ResnetConfig config_;
  std::int64_t max_batch_;
  const kernels::KernelTable& k_;
  const kernels::SparseKernelTable& sparse_k_;
  SparseConv2d stem_;
  std::vector<Block> blocks_;
  CsrMatrix fc_;
  std::vector<float> fc_bias_;
  std::int64_t features_ = 0, last_hw_ = 0;
  std::vector<float> acts_;     // 4 × (max_batch, largest C·H·W)
  std::vector<float> columns_, rows_;  // SparseConvScratch of the largest layer
  std::vector<float> pooled_, pooled_t_, logits_t_, logits_;  // (N, F), (F, N), (classes, N), (N, classes)
};

}  // namespace sb::compress
