// SPDX-License-Identifier: Apache-2.0
// The one place that knows resnet's memory layout: which units a model instance (a pipeline
// partition) holds, and the names, shapes, initialisation and storage order of their
// parameters, running statistics, activations and backward scratch. Internal to resnet.cpp.
// Leaves out the arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::resnet::detail {

using i64 = std::int64_t;

// The units one model instance holds: [first, end) with 0 the stem, 1 + b block b and
// blocks.size() + 1 the head (resnet_pipeline_units' order).
struct Layout {
  const ResnetConfig& c;
  const std::vector<ResnetBlockShape>& blocks;
  i64 first, end;
  // strategy.recompute full: a slot keeps each block's output and BatchNorm statistics only; the
  // block's other tensors live in the recompute scratch (for_each_recomputed_view)
  bool full_recompute = false;

  i64 units() const { return static_cast<i64>(blocks.size()) + 2; }
  bool stem() const { return first == 0; }
  bool head() const { return end == units(); }
  bool block(std::size_t b) const {
    return static_cast<i64>(b) + 1 >= first && static_cast<i64>(b) + 1 < end;
  }
  // C·H·W of one image at unit u's input and output.
  i64 in_floats(i64 u) const {
    if (u == 0) return c.image_channels * c.image_size * c.image_size;
    if (u == units() - 1) return out_floats(u - 1);  // the head pools the last block's output
    const ResnetBlockShape& b = blocks[u - 1];
    return b.in_channels * b.in_size * b.in_size;
  }
  i64 out_floats(i64 u) const {
    if (u == 0) return c.stem_channels * resnet_stem_output_size(c) * resnet_stem_output_size(c);
    if (u == units() - 1) return c.classes;
    const ResnetBlockShape& b = blocks[u - 1];
    return b.out_channels * b.out_size * b.out_size;
  }
  // The largest (C, H, W) tensor of one image that the stem or a block here writes: the size of
  // the shortcut scratch (for the whole network: the stem's output).
  i64 max_image_floats() const {
    i64 floats = 0;
    for (i64 u = std::max<i64>(first, 0); u < std::min(end, units() - 1); ++u)
      floats = std::max(floats, out_floats(u));
    return floats;
  }
  // The backward scratch also holds the gradients of this range's output and input.
  i64 max_gradient_floats() const {
    i64 floats = max_image_floats();
    if (!stem()) floats = std::max(floats, in_floats(first));
    if (!head()) floats = std::max(floats, out_floats(end - 1));
    return floats;
  }
};

inline Layout whole_network(const ResnetConfig& c, const std::vector<ResnetBlockShape>& blocks) {
  return {c, blocks, 0, static_cast<i64>(blocks.size()) + 2};
}

// Resolves kResnetAllUnits and checks the range.
inline Layout layout_of(const ResnetConfig& c, const std::vector<ResnetBlockShape>& blocks,
                 ResnetPartition partition, Recompute recompute = Recompute::none) {
  const i64 units = static_cast<i64>(blocks.size()) + 2;
  const i64 end = partition.end == kResnetAllUnits ? units : partition.end;
  SB_USER_CHECK(partition.first >= 0 && partition.first < end && end <= units,
                "resnet '{}': the partition [{}, {}) is not a non-empty range of its {} units "
                "(the stem, {} blocks, the head)",
                c.name, partition.first, end, units, units - 2);
  SB_USER_CHECK(recompute != Recompute::selective,
                "resnet '{}': recompute selective drops attention probabilities, which a ResNet has none of; "
                "use none or full", c.name);
  return {c, blocks, partition.first, end, recompute == Recompute::full};
}

// Calls f(spec, view, k) for every parameter tensor of the layout's units in storage order, k
// the tensor's index over the whole network: the one place that knows the parameter layout,
// names and initialisation.
template <class S, class F>
void for_each_parameter(ParameterTensorsT<S>& p, const Layout& l, F&& f) {
  using enum ParameterInit;
  const ResnetConfig& c = l.c;
  std::uint64_t k = 0;
  bool here = false;  // the unit being walked belongs to the layout
  const auto tensor = [&](const ParameterSpec& spec, S*& view) {
    if (here) f(spec, view, k);
    ++k;
  };
  const auto conv = [&](const std::string& name, S*& weight, i64 OC, i64 IC, i64 K) {
    const double fan_out_std = std::sqrt(2.0 / static_cast<double>(OC * K * K));
    tensor(ParameterSpec{name + ".weight", {OC, IC, K, K}, kaiming_normal_fan_out, fan_out_std},
           weight);
  };
  const auto batchnorm = [&](const std::string& name, BatchNormTensorsT<S>& bn, i64 C) {
    tensor(ParameterSpec{name + ".weight", {C}, ones, 1.0}, bn.weight);
    tensor(ParameterSpec{name + ".bias", {C}, zeros, 0.0}, bn.bias);
  };
  here = l.stem();
  conv("stem.conv", p.stem_conv, c.stem_channels, c.image_channels, c.stem_kernel);
  batchnorm("stem.bn", p.stem_bn, c.stem_channels);
  p.blocks.resize(l.blocks.size());
  for (std::size_t i = 0; i < l.blocks.size(); ++i) {
    const ResnetBlockShape& s = l.blocks[i];
    BlockTensorsT<S>& t = p.blocks[i];
    here = l.block(i);
    conv(s.name + ".conv1", t.conv1, s.out_channels, s.in_channels, 3);
    batchnorm(s.name + ".bn1", t.bn1, s.out_channels);
    conv(s.name + ".conv2", t.conv2, s.out_channels, s.out_channels, 3);
    batchnorm(s.name + ".bn2", t.bn2, s.out_channels);
    if (s.shortcut_conv) {
      conv(s.name + ".shortcut.conv", t.shortcut_conv, s.out_channels, s.in_channels, 1);
      batchnorm(s.name + ".shortcut.bn", t.shortcut_bn, s.out_channels);
    }
  }
  here = l.head();
  const i64 features = l.blocks.back().out_channels;
  const double bound = 1.0 / std::sqrt(static_cast<double>(features));  // fan_in of the head
  tensor(ParameterSpec{"fc.weight", {c.classes, features}, linear_uniform, bound}, p.fc_weight);
  tensor(ParameterSpec{"fc.bias", {c.classes}, linear_uniform, bound}, p.fc_bias);
}

// The same for the running statistics: f(name, numel, view), mean then variance per BatchNorm.
template <class F>
void for_each_statistic(RunningStatisticsTensors& r, const Layout& l, F&& f) {
  const auto batchnorm = [&](const std::string& name, RunningStatistics& s, i64 C) {
    f(name + ".running_mean", C, s.mean);
    f(name + ".running_var", C, s.var);
  };
  if (l.stem()) batchnorm("stem.bn", r.stem_bn, l.c.stem_channels);
  r.blocks.resize(l.blocks.size());
  for (std::size_t i = 0; i < l.blocks.size(); ++i) {
    if (!l.block(i)) continue;
    const ResnetBlockShape& s = l.blocks[i];
    batchnorm(s.name + ".bn1", r.blocks[i].bn1, s.out_channels);
    batchnorm(s.name + ".bn2", r.blocks[i].bn2, s.out_channels);
    if (s.shortcut_conv) {
      batchnorm(s.name + ".shortcut.bn", r.blocks[i].shortcut_bn, s.out_channels);
    }
  }
}

// Calls f(view, numel) for every activation tensor of one slot for N images, in storage order;
// views are S* or float* (statistics, losses).
template <class S, class F>
void for_each_view(ActivationTensorsT<S>& a, const Layout& l, i64 N, F&& f) {
  const ResnetConfig& c = l.c;
  const i64 stem = resnet_stem_output_size(c), C0 = c.stem_channels;
  const auto statistics = [&](BatchStatistics& s, i64 C) {
    f(s.mean, C);
    f(s.rstd, C);
  };
  f(a.input, N * l.in_floats(l.first));
  if (l.stem()) {
    f(a.stem_conv, N * C0 * stem * stem);
    statistics(a.stem_bn, C0);
    f(a.stem_relu, N * C0 * stem * stem);
  }
  a.blocks.resize(l.blocks.size());
  for (std::size_t i = 0; i < l.blocks.size(); ++i) {
    if (!l.block(i)) continue;
    const ResnetBlockShape& s = l.blocks[i];
    BlockActivationsT<S>& b = a.blocks[i];
    const i64 n = N * s.out_channels * s.out_size * s.out_size;
    const bool kept = !l.full_recompute;  // dropped: pointed into the recompute scratch instead
    if (kept) f(b.conv1, n);
    statistics(b.bn1, s.out_channels);
    if (kept) f(b.relu1, n);
    if (kept) f(b.conv2, n);
    statistics(b.bn2, s.out_channels);
    if (s.shortcut_conv) {
      if (kept) f(b.shortcut_conv, n);
      statistics(b.shortcut_bn, s.out_channels);
    }
    f(b.out, n);
  }
  if (l.head()) {
    f(a.pooled, N * l.blocks.back().out_channels);
    f(a.logits, N * c.classes);
    f(a.probs, N * c.classes);
    f(a.losses, N);
  }
}

// Under full recomputation, block b's dropped tensors (its convolutions' outputs and the ReLU
// between them), in the recompute scratch that every block of every slot reuses: the forward
// writes them there and the backward writes them again before reading them.
template <class S, class F>
void for_each_recomputed_view(BlockActivationsT<S>& b, const ResnetBlockShape& s, i64 N, F&& f) {
  const i64 n = N * s.out_channels * s.out_size * s.out_size;
  f(b.conv1, n);
  f(b.relu1, n);
  f(b.conv2, n);
  if (s.shortcut_conv) f(b.shortcut_conv, n);
}

// The recompute scratch's bytes: the largest block's dropped tensors (0 without full recomputation).
template <class S>
i64 recompute_scratch_bytes(const Layout& l, i64 N) {
  i64 most = 0;
  for (std::size_t i = 0; l.full_recompute && i < l.blocks.size(); ++i) {
    if (!l.block(i)) continue;
    BlockActivationsT<S> views{};
    i64 bytes = 0;
    for_each_recomputed_view(views, l.blocks[i], N, [&](S*&, i64 numel) { bytes += numel * static_cast<i64>(sizeof(S)); });
    most = std::max(most, bytes);
  }
  return most;
}

// The same for the backward scratch.
template <class S, class F>
void for_each_view(ActivationGradientsT<S>& g, const Layout& l, i64 N, F&& f) {
  if (l.head()) {
    f(g.dlosses, N);
    f(g.dlogits, N * l.c.classes);
    f(g.dpooled, N * l.blocks.back().out_channels);
  }
  const i64 scratch = N * l.max_gradient_floats();
  for (S** view :
       {&g.dblock_out, &g.dblock_in, &g.dconv2, &g.drelu1, &g.dconv1, &g.dshortcut_conv}) {
    f(*view, scratch);
  }
}

// Each view starts at a multiple of 4 bytes, so float statistics after an odd count of 16-bit
// values stay aligned (no padding at all in fp32).
inline i64 aligned_bytes(i64 bytes) { return (bytes + 3) / 4 * 4; }

template <class Tensors>
i64 count_bytes(const Layout& l, i64 N) {
  Tensors views{};
  i64 n = 0;
  for_each_view(views, l, N, [&](auto*& view, i64 numel) { n += aligned_bytes(numel * static_cast<i64>(sizeof(*view))); });
  return n;
}

// Points every view into base for the layout at N and returns the bytes used. Not laid out (a
// model that only records its kernel calls): every view at base, its placeholder.
template <class Tensors>
i64 point_views(Tensors& views, std::byte* base, const Layout& l, i64 N, bool laid_out = true) {
  i64 n = 0;
  for_each_view(views, l, N, [&](auto*& view, i64 numel) {
    view = reinterpret_cast<std::remove_reference_t<decltype(view)>>(base + (laid_out ? n : 0));
    n += aligned_bytes(numel * static_cast<i64>(sizeof(*view)));
  });
  return n;
}

}  // namespace sb::resnet::detail
