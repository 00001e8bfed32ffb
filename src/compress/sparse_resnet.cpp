// SPDX-License-Identifier: Apache-2.0
// resnet-mini's sparse inference (see sparse_resnet.hpp).
#include "compress/sparse_resnet.hpp"

#include <algorithm>
#include <map>

#include "compress/batchnorm_folding.hpp"
#include "core/check.hpp"

namespace sb::compress {

namespace {

using i64 = std::int64_t;

// conv `conv` from the stored weights with BatchNorm `bn` folded in (γ β stored, running
// statistics the model's).
SparseConv2d folded_sparse_conv(const StoredWeights& stored, const std::map<std::string, const float*>& statistics,
                                const std::string& conv, const std::string& bn, const Conv2dShape& s) {
  const std::vector<float> weight = stored.at(conv + ".weight").to_dense();
  const std::vector<float> gamma = stored.at(bn + ".weight").to_dense(), beta = stored.at(bn + ".bias").to_dense();
  SB_CHECK(static_cast<i64>(weight.size()) == s.OC * s.K() && static_cast<i64>(gamma.size()) == s.OC,
           "SparseResnet: '{}' holds {} weights, its shape {}", conv, weight.size(), s.OC * s.K());
  const auto mean = statistics.find(bn + ".running_mean"), var = statistics.find(bn + ".running_var");
  SB_CHECK(mean != statistics.end() && var != statistics.end(), "SparseResnet: no running statistics of '{}'", bn);
  const FoldedConv f = fold_batchnorm(weight.data(), nullptr, s.OC, s.K(), gamma.data(), beta.data(), mean->second,
                                      var->second, resnet::kBatchNormEps);
  return {s, CsrMatrix::from_dense(f.weight.data(), s.OC, s.K()), f.bias};
}

}  // namespace

void im2col_rows(float* columns, i64 ld, const float* inp, const Conv2dShape& s) {
  const i64 OH = s.OH(), OW = s.OW();
  for (i64 c = 0; c < s.C; ++c)
    for (i64 kh = 0; kh < s.KH; ++kh)
      for (i64 kw = 0; kw < s.KW; ++kw) {
        float* row = columns + ((c * s.KH + kh) * s.KW + kw) * ld;
        for (i64 oh = 0; oh < OH; ++oh) {
          const i64 ih = oh * s.stride - s.pad + kh;
          float* out = row + oh * OW;
          if (ih < 0 || ih >= s.H) {
            std::fill(out, out + OW, 0.0f);
            continue;
          }
          const float* in = inp + (c * s.H + ih) * s.W;
          for (i64 ow = 0; ow < OW; ++ow) {
            const i64 iw = ow * s.stride - s.pad + kw;
            out[ow] = iw >= 0 && iw < s.W ? in[iw] : 0.0f;
          }
        }
      }
}

i64 SparseConv2d::images_per_call() const {
  return std::max<i64>(1, kSparseColumnsPerCall / (shape.OH() * shape.OW()));
}

void SparseConv2d::forward(float* out, const float* inp, i64 N, const SparseConvScratch& scratch,
                           const kernels::SparseKernelTable& k) const {
  const i64 in_size = shape.C * shape.H * shape.W, P = shape.OH() * shape.OW(), OC = shape.OC;
  for (i64 first = 0; first < N; first += images_per_call()) {
    const i64 G = std::min(images_per_call(), N - first), ld = G * P;
    for (i64 g = 0; g < G; ++g) im2col_rows(scratch.columns + g * P, ld, inp + (first + g) * in_size, shape);
    weight.multiply(scratch.rows, scratch.columns, bias.data(), ld, k);  // (OC, G·OH·OW)
    for (i64 g = 0; g < G; ++g)  // -> (G, OC, OH·OW)
      for (i64 o = 0; o < OC; ++o)
        std::copy_n(scratch.rows + o * ld + g * P, P, out + ((first + g) * OC + o) * P);
  }
}

SparseResnet::SparseResnet(resnet::ResnetModel& model, const StoredWeights& stored, i64 max_batch,
                           kernels::Backend backend)
    : config_(model.config()),
      max_batch_(max_batch),
      k_(kernels::kernels_for(backend)),
      sparse_k_(kernels::sparse_kernels_for(backend)) {
  SB_CHECK(model.has_stem() && model.has_head(), "SparseResnet needs the whole network");
  SB_CHECK(max_batch >= 1 && !config_.stem_maxpool, "SparseResnet: max_batch {} of {}", max_batch, config_.name);
  std::map<std::string, const float*> statistics;
  for (const auto& v : model.statistics_views()) statistics[v.name] = v.values;

  const i64 size = config_.image_size, pad = config_.stem_kernel / 2;
  const Conv2dShape stem{config_.image_channels, size, size, config_.stem_channels, config_.stem_kernel,
                         config_.stem_kernel, config_.stem_stride, pad};
  stem_ = folded_sparse_conv(stored, statistics, "stem.conv", "stem.bn", stem);
  i64 max_chw = stem.OC * stem.OH() * stem.OW(), max_columns = 0, max_rows = 0;
  const auto note = [&](const SparseConv2d& c) {
    const i64 ld = std::min(c.images_per_call(), max_batch) * c.shape.OH() * c.shape.OW();
    max_columns = std::max(max_columns, c.shape.K() * ld);
    max_rows = std::max(max_rows, c.shape.OC * ld);
  };
  note(stem_);
  for (const resnet::ResnetBlockShape& b : resnet::resnet_blocks(config_)) {
    const i64 IC = b.in_channels, OC = b.out_channels, H = b.in_size;
    const Conv2dShape c1{IC, H, H, OC, 3, 3, b.stride, 1}, c2{OC, b.out_size, b.out_size, OC, 3, 3, 1, 1};
    Block block{folded_sparse_conv(stored, statistics, b.name + ".conv1", b.name + ".bn1", c1),
                folded_sparse_conv(stored, statistics, b.name + ".conv2", b.name + ".bn2", c2), std::nullopt};
    note(block.conv1);
    note(block.conv2);
    if (b.shortcut_conv) {
      const Conv2dShape sc{IC, H, H, OC, 1, 1, b.stride, 0};
      block.shortcut = folded_sparse_conv(stored, statistics, b.name + ".shortcut.conv", b.name + ".shortcut.bn", sc);
      note(*block.shortcut);
    }
    blocks_.push_back(std::move(block));
    max_chw = std::max(max_chw, OC * b.out_size * b.out_size);
    features_ = OC;
    last_hw_ = b.out_size * b.out_size;
  }
  fc_ = CsrMatrix::from_dense(stored.at("fc.weight").to_dense().data(), config_.classes, features_);
  fc_bias_ = stored.at("fc.bias").to_dense();
  acts_.resize(static_cast<std::size_t>(4 * max_batch * max_chw));
  columns_.resize(static_cast<std::size_t>(max_columns));
  rows_.resize(static_cast<std::size_t>(max_rows));
  pooled_.resize(static_cast<std::size_t>(max_batch * features_));
  pooled_t_.resize(pooled_.size());
  logits_t_.resize(static_cast<std::size_t>(max_batch * config_.classes));
  logits_.resize(logits_t_.size());
}

const float* SparseResnet::forward(const float* images, i64 N) {
  SB_CHECK(N >= 1 && N <= max_batch_, "SparseResnet forward: N = {} outside [1, {}]", N, max_batch_);
  const i64 slot = static_cast<i64>(acts_.size()) / 4;
  float *x = acts_.data(), *t = x + slot, *u = t + slot, *s = u + slot;
  const SparseConvScratch columns{columns_.data(), rows_.data()};
  stem_.forward(x, images, N, columns, sparse_k_);
  k_.relu_forward(x, x, N * stem_.shape.OC * stem_.shape.OH() * stem_.shape.OW());
  for (const Block& b : blocks_) {
    const Conv2dShape& c2 = b.conv2.shape;
    const i64 n = N * c2.OC * c2.OH() * c2.OW();
    b.conv1.forward(t, x, N, columns, sparse_k_);
    k_.relu_forward(t, t, n);
    b.conv2.forward(u, t, N, columns, sparse_k_);
    const float* shortcut = x;
    if (b.shortcut) {
      b.shortcut->forward(s, x, N, columns, sparse_k_);
      shortcut = s;
    }
    k_.residual_forward(t, u, shortcut, n);  // t is free once conv2 has read it
    k_.relu_forward(t, t, n);
    std::swap(x, t);
  }
  k_.global_avgpool_forward(pooled_.data(), x, N, features_, last_hw_);
  // (N, F) -> (F, N), the CSR product's column layout, and the logits back to (N, classes)
  for (i64 i = 0; i < N; ++i)
    for (i64 f = 0; f < features_; ++f) pooled_t_[static_cast<std::size_t>(f * N + i)] = pooled_[static_cast<std::size_t>(i * features_ + f)];
  fc_.multiply(logits_t_.data(), pooled_t_.data(), fc_bias_.data(), N, sparse_k_);
  const i64 classes = config_.classes;
  for (i64 i = 0; i < N; ++i)
    for (i64 c = 0; c < classes; ++c) logits_[static_cast<std::size_t>(i * classes + c)] = logits_t_[static_cast<std::size_t>(c * N + i)];
  return logits_.data();
}

i64 SparseResnet::nonzeros() const {
  i64 total = stem_.weight.nonzeros() + fc_.nonzeros();
  for (const Block& b : blocks_) {
    total += b.conv1.weight.nonzeros() + b.conv2.weight.nonzeros();
    if (b.shortcut) total += b.shortcut->weight.nonzeros();
  }
  return total;
}

}  // namespace sb::compress
