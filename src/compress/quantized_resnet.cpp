// SPDX-License-Identifier: Apache-2.0
// resnet-mini's int8 inference (see quantized_resnet.hpp).
#include "compress/quantized_resnet.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "compress/batchnorm_folding.hpp"
#include "compress/channels_last.hpp"
#include "core/check.hpp"

namespace sb::compress {

namespace {

using i64 = std::int64_t;

// The trained model's tensors by name (parameters and running statistics).
struct NamedTensors {
  std::map<std::string, const float*> values;
  const float* at(const std::string& name) const {
    const auto it = values.find(name);
    SB_CHECK(it != values.end(), "QuantizedResnet: the model has no tensor '{}'", name);
    return it->second;
  }
};

// conv `prefix.conv` (or `prefix.convN`) with BatchNorm `bn` folded in.
QuantizedConv2d folded_conv(const NamedTensors& t, const std::string& conv, const std::string& bn,
                            const Conv2dShape& s, MemoryTracker& tracker) {
  const FoldedConv f = fold_batchnorm(t.at(conv + ".weight"), nullptr, s.OC, s.K(), t.at(bn + ".weight"),
                                      t.at(bn + ".bias"), t.at(bn + ".running_mean"),
                                      t.at(bn + ".running_var"), resnet::kBatchNormEps);
  return QuantizedConv2d(conv, s, f.weight.data(), f.bias.data(), tracker);
}

}  // namespace

QuantizedResnet::QuantizedResnet(resnet::ResnetModel& model, i64 max_batch, kernels::Backend backend,
                                 MemoryTracker& tracker)
    : config_(model.config()), max_batch_(max_batch), k_(kernels::kernels_for(backend)) {
  SB_USER_CHECK(backend != kernels::Backend::cuda,
                "int8 inference runs on the cpu or reference back-end, not cuda");
  SB_CHECK(model.has_stem() && model.has_head(), "QuantizedResnet needs the whole network");
  SB_CHECK(max_batch >= 1, "QuantizedResnet: max_batch {}", max_batch);
  NamedTensors t;
  for (const auto& v : model.parameter_views()) t.values[v.name] = v.param;
  for (const auto& v : model.statistics_views()) t.values[v.name] = v.values;

  const i64 size = config_.image_size, pad = config_.stem_kernel / 2;
  const Conv2dShape stem{config_.image_channels, size, size, config_.stem_channels, config_.stem_kernel,
                         config_.stem_kernel, config_.stem_stride, pad};
  stem_.emplace(folded_conv(t, "stem.conv", "stem.bn", stem, tracker));
  i64 max_chw = stem.OC * stem.OH() * stem.OW();
  for (const resnet::ResnetBlockShape& b : resnet::resnet_blocks(config_)) {
    const i64 IC = b.in_channels, OC = b.out_channels, H = b.in_size;
    const Conv2dShape c1{IC, H, H, OC, 3, 3, b.stride, 1}, c2{OC, b.out_size, b.out_size, OC, 3, 3, 1, 1};
    Block block{folded_conv(t, b.name + ".conv1", b.name + ".bn1", c1, tracker),
                folded_conv(t, b.name + ".conv2", b.name + ".bn2", c2, tracker), std::nullopt};
    if (b.shortcut_conv) {
      const Conv2dShape sc{IC, H, H, OC, 1, 1, b.stride, 0};
      block.shortcut.emplace(folded_conv(t, b.name + ".shortcut.conv", b.name + ".shortcut.bn", sc, tracker));
    }
    blocks_.push_back(std::move(block));
    max_chw = std::max(max_chw, OC * b.out_size * b.out_size);
    features_ = OC;
    last_hw_ = b.out_size * b.out_size;
  }
  fc_.emplace("fc", t.at("fc.weight"), t.at("fc.bias"), config_.classes, features_, tracker);

  const i64 chunk = std::min(max_batch, kChunkImages);
  i64 input_q = chunk * features_, first_in = chunk * features_ * last_hw_, first_out = 0;
  for_each_conv([&](QuantizedConv2d& c) {
    input_q = std::max(input_q, c.input_q_bytes(chunk));
    first_in = std::max(first_in, c.channels_first_in_floats(chunk));
    first_out = std::max(first_out, c.channels_first_out_floats(chunk));
  });
  const i64 image_floats = config_.image_channels * size * size;
  const i64 act_floats = chunk * (image_floats + 4 * max_chw + features_) + max_batch * config_.classes;
  acts_ = TrackedBuffer(tracker, MemoryCategory::activations, 4 * act_floats, "quantized_resnet.acts");
  float* a = acts_.as<float>();
  images_ = a;
  a += chunk * image_floats;
  for (float*& buffer : buffers_) {
    buffer = a;
    a += chunk * max_chw;
  }
  pooled_ = a;
  logits_ = pooled_ + chunk * features_;
  scratch_ = TrackedBuffer(tracker, MemoryCategory::workspace, 4 * (first_in + first_out) + input_q,
                           "quantized_resnet.scratch");
  conv_scratch_.channels_first_in = scratch_.as<float>();
  conv_scratch_.channels_first_out = conv_scratch_.channels_first_in + first_in;
  conv_scratch_.input_q = reinterpret_cast<std::int8_t*>(conv_scratch_.channels_first_out + first_out);
}

template <class Function>
void QuantizedResnet::for_each_conv(Function f) {
  f(*stem_);
  for (Block& b : blocks_) {
    f(b.conv1);
    f(b.conv2);
    if (b.shortcut) f(*b.shortcut);
  }
}

const float* QuantizedResnet::forward(const float* images, i64 N, InferenceMode mode) {
  SB_CHECK(N >= 1 && N <= max_batch_, "QuantizedResnet forward: N = {} outside [1, {}]", N, max_batch_);
  const i64 C = config_.image_channels, HW = config_.image_size * config_.image_size;
  for (i64 first = 0; first < N; first += kChunkImages) {
    const i64 n = std::min(kChunkImages, N - first);
    to_channels_last(images_, images + first * C * HW, n, C, HW);
    forward_chunk(logits_ + first * config_.classes, n, mode);
  }
  return logits_;
}

void QuantizedResnet::forward_chunk(float* logits, i64 N, InferenceMode mode) {
  float *x = buffers_[0], *t = buffers_[1], *u = buffers_[2], *s = buffers_[3];
  QuantizedConv2d& stem = *stem_;
  stem.forward(x, images_, N, mode, conv_scratch_, k_);
  k_.relu_forward(x, x, N * stem.shape().outputs());
  for (Block& b : blocks_) {
    const i64 n = N * b.conv2.shape().outputs();
    b.conv1.forward(t, x, N, mode, conv_scratch_, k_);
    k_.relu_forward(t, t, n);
    b.conv2.forward(u, t, N, mode, conv_scratch_, k_);
    const float* shortcut = x;
    if (b.shortcut) {
      b.shortcut->forward(s, x, N, mode, conv_scratch_, k_);
      shortcut = s;
    }
    k_.residual_forward(t, u, shortcut, n);  // t is free once conv2 has read it
    k_.relu_forward(t, t, n);
    std::swap(x, t);
  }
  // the pool's sums in the trained model's channels-first order, so they round as its pool does
  to_channels_first(conv_scratch_.channels_first_in, x, N, features_, last_hw_);
  k_.global_avgpool_forward(pooled_, conv_scratch_.channels_first_in, N, features_, last_hw_);
  fc_->forward(logits, pooled_, conv_scratch_.input_q, N, mode, k_);
}

void QuantizedResnet::finish_calibration() {
  for_each_conv([](QuantizedConv2d& c) { c.gemm().finish_calibration(); });
  fc_->finish_calibration();
}

i64 QuantizedResnet::weight_bytes() const {
  i64 bytes = fc_->stored_bytes();
  bytes += stem_->gemm().stored_bytes();
  for (const Block& b : blocks_) {
    bytes += b.conv1.gemm().stored_bytes() + b.conv2.gemm().stored_bytes();
    if (b.shortcut) bytes += b.shortcut->gemm().stored_bytes();
  }
  return bytes;
}

i64 QuantizedResnet::float_weight_bytes() const { return 4 * resnet::resnet_parameter_count(config_); }

}  // namespace sb::compress
