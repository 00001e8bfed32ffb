// resnet-mini forward and backward as a fixed sequence of kernel calls over named views, in the
// manner of llm.c's train_gpt2.c. Leaves out the data loader and the training loop.
#include "models/resnet/resnet.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::resnet {

using i64 = std::int64_t;

namespace {

// The largest (C, H, W) tensor of one image between the stem and the pool: the size of the
// scratch tensors that every layer reuses.
i64 max_image_floats(const ResnetConfig& c, const std::vector<ResnetBlockShape>& blocks) {
  const i64 stem = resnet_stem_output_size(c);
  i64 floats = c.stem_channels * stem * stem;
  for (const auto& b : blocks) floats = std::max(floats, b.out_channels * b.out_size * b.out_size);
  return floats;
}

// Calls f(spec, view) for every parameter tensor in storage order: the one place that knows
// the parameter layout, names and initialisation.
template <class F>
void for_each_parameter(ParameterTensors& p, const ResnetConfig& c,
                        const std::vector<ResnetBlockShape>& blocks, F&& f) {
  using enum ParameterInit;
  const auto conv = [&](const std::string& name, float*& weight, i64 OC, i64 IC, i64 K) {
    const double fan_out_std = std::sqrt(2.0 / static_cast<double>(OC * K * K));
    f(ParameterSpec{name + ".weight", {OC, IC, K, K}, kaiming_normal_fan_out, fan_out_std},
      weight);
  };
  const auto batchnorm = [&](const std::string& name, BatchNormTensors& bn, i64 C) {
    f(ParameterSpec{name + ".weight", {C}, ones, 1.0}, bn.weight);
    f(ParameterSpec{name + ".bias", {C}, zeros, 0.0}, bn.bias);
  };
  conv("stem.conv", p.stem_conv, c.stem_channels, c.image_channels, c.stem_kernel);
  batchnorm("stem.bn", p.stem_bn, c.stem_channels);
  p.blocks.resize(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ResnetBlockShape& s = blocks[i];
    BlockTensors& t = p.blocks[i];
    conv(s.name + ".conv1", t.conv1, s.out_channels, s.in_channels, 3);
    batchnorm(s.name + ".bn1", t.bn1, s.out_channels);
    conv(s.name + ".conv2", t.conv2, s.out_channels, s.out_channels, 3);
    batchnorm(s.name + ".bn2", t.bn2, s.out_channels);
    if (s.shortcut_conv) {
      conv(s.name + ".shortcut.conv", t.shortcut_conv, s.out_channels, s.in_channels, 1);
      batchnorm(s.name + ".shortcut.bn", t.shortcut_bn, s.out_channels);
    }
  }
  const i64 features = blocks.back().out_channels;
  const double bound = 1.0 / std::sqrt(static_cast<double>(features));  // fan_in of the head
  f(ParameterSpec{"fc.weight", {c.classes, features}, linear_uniform, bound}, p.fc_weight);
  f(ParameterSpec{"fc.bias", {c.classes}, linear_uniform, bound}, p.fc_bias);
}

// The same for the running statistics: f(name, numel, view), mean then variance per BatchNorm.
template <class F>
void for_each_statistic(RunningStatisticsTensors& r, const ResnetConfig& c,
                        const std::vector<ResnetBlockShape>& blocks, F&& f) {
  const auto batchnorm = [&](const std::string& name, RunningStatistics& s, i64 C) {
    f(name + ".running_mean", C, s.mean);
    f(name + ".running_var", C, s.var);
  };
  batchnorm("stem.bn", r.stem_bn, c.stem_channels);
  r.blocks.resize(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ResnetBlockShape& s = blocks[i];
    batchnorm(s.name + ".bn1", r.blocks[i].bn1, s.out_channels);
    batchnorm(s.name + ".bn2", r.blocks[i].bn2, s.out_channels);
    if (s.shortcut_conv) {
      batchnorm(s.name + ".shortcut.bn", r.blocks[i].shortcut_bn, s.out_channels);
    }
  }
}

// Calls f(view, numel) for every activation tensor for N images, in storage order.
template <class F>
void for_each_view(ActivationTensors& a, const ResnetConfig& c,
                   const std::vector<ResnetBlockShape>& blocks, i64 N, F&& f) {
  const i64 S = c.image_size, stem = resnet_stem_output_size(c), C0 = c.stem_channels;
  const auto statistics = [&](BatchStatistics& s, i64 C) {
    f(s.mean, C);
    f(s.rstd, C);
  };
  f(a.images, N * c.image_channels * S * S);
  f(a.stem_conv, N * C0 * stem * stem);
  statistics(a.stem_bn, C0);
  f(a.stem_relu, N * C0 * stem * stem);
  a.blocks.resize(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ResnetBlockShape& s = blocks[i];
    BlockActivations& b = a.blocks[i];
    const i64 n = N * s.out_channels * s.out_size * s.out_size;
    f(b.conv1, n);
    statistics(b.bn1, s.out_channels);
    f(b.relu1, n);
    f(b.conv2, n);
    statistics(b.bn2, s.out_channels);
    if (s.shortcut_conv) {
      f(b.shortcut_conv, n);
      statistics(b.shortcut_bn, s.out_channels);
    }
    f(b.out, n);
  }
  const i64 features = blocks.back().out_channels, scratch = N * max_image_floats(c, blocks);
  f(a.pooled, N * features);
  f(a.logits, N * c.classes);
  f(a.probs, N * c.classes);
  f(a.losses, N);
  f(a.shortcut_bn_out, scratch);
}

// The same for the backward scratch.
template <class F>
void for_each_view(ActivationGradients& g, const ResnetConfig& c,
                   const std::vector<ResnetBlockShape>& blocks, i64 N, F&& f) {
  const i64 features = blocks.back().out_channels, scratch = N * max_image_floats(c, blocks);
  f(g.dlosses, N);
  f(g.dlogits, N * c.classes);
  f(g.dpooled, N * features);
  for (float** view :
       {&g.dblock_out, &g.dblock_in, &g.dconv2, &g.drelu1, &g.dconv1, &g.dshortcut_conv}) {
    f(*view, scratch);
  }
}

template <class Tensors>
i64 count_floats(const ResnetConfig& c, const std::vector<ResnetBlockShape>& blocks, i64 N) {
  Tensors views{};
  i64 n = 0;
  for_each_view(views, c, blocks, N, [&](float*&, i64 numel) { n += numel; });
  return n;
}

// Points every view into base for the layout at N and returns the floats used.
template <class Tensors>
i64 point_views(Tensors& views, float* base, const ResnetConfig& c,
                const std::vector<ResnetBlockShape>& blocks, i64 N) {
  i64 n = 0;
  for_each_view(views, c, blocks, N, [&](float*& view, i64 numel) {
    view = base + n;
    n += numel;
  });
  return n;
}

void zero(float* x, i64 n) { std::memset(x, 0, static_cast<std::size_t>(n) * sizeof(float)); }

constexpr i64 kFloat = static_cast<i64>(sizeof(float));

}  // namespace

std::vector<ParameterSpec> resnet_parameter_specs(const ResnetConfig& config) {
  ParameterTensors views{};
  std::vector<ParameterSpec> specs;
  for_each_parameter(views, config, resnet_blocks(config),
                     [&](const ParameterSpec& spec, float*&) { specs.push_back(spec); });
  return specs;
}

i64 resnet_activation_bytes(const ResnetConfig& config, i64 N) {
  return kFloat * count_floats<ActivationTensors>(config, resnet_blocks(config), N);
}

i64 resnet_activation_gradient_bytes(const ResnetConfig& config, i64 N) {
  return kFloat * count_floats<ActivationGradients>(config, resnet_blocks(config), N);
}

ResnetModel::ResnetModel(const ResnetConfig& config, i64 max_batch, kernels::Backend backend,
                         MemoryTracker& tracker)
    : config_(config),
      blocks_(),
      backend_(backend),
      k_(&kernels::kernels_for(backend)),
      max_batch_(max_batch),
      parameter_count_(0) {
  validate_resnet_config(config_);
  SB_USER_CHECK(!config_.spec_only, "resnet '{}' is spec only: its shapes serve the cost model, "
                "it cannot be trained (trainable: resnet-mini)", config_.name);
  SB_USER_CHECK(config_.block == ResnetBlock::basic && !config_.stem_maxpool,
                "resnet '{}': the trainable model has basic blocks and no max-pool stem",
                config_.name);
  SB_USER_CHECK(max_batch > 0, "resnet '{}': batch must be positive, got {}", config_.name,
                max_batch);
  blocks_ = resnet_blocks(config_);
  parameter_count_ = resnet_parameter_count(config_);
  i64 spec_count = 0;
  for (const auto& spec : resnet_parameter_specs(config_)) spec_count += spec.shape.numel();
  SB_CHECK(spec_count == parameter_count_, "resnet parameter shapes sum to {}, layers give {}",
           spec_count, parameter_count_);

  const i64 param_bytes = kFloat * parameter_count_;
  params_memory_ = TrackedBuffer(tracker, MemoryCategory::params, param_bytes, "resnet params");
  grads_memory_ = TrackedBuffer(tracker, MemoryCategory::grads, param_bytes, "resnet grads");
  // Running statistics are model state saved with the weights but never trained: charged to
  // params, kept out of parameter_slices().
  statistics_memory_ =
      TrackedBuffer(tracker, MemoryCategory::params,
                    2 * kFloat * resnet_batchnorm_channels(config_), "resnet running statistics");
  acts_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                               resnet_activation_bytes(config_, max_batch), "resnet activations");
  labels_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                                 max_batch * static_cast<i64>(sizeof(std::int32_t)),
                                 "resnet labels");
  acts_grads_memory_ = TrackedBuffer(tracker, MemoryCategory::workspace,
                                     resnet_activation_gradient_bytes(config_, max_batch),
                                     "resnet activation grads");

  const auto point = [this](ParameterTensors& views, float* base) {
    for_each_parameter(views, config_, blocks_, [&](const ParameterSpec& spec, float*& view) {
      view = base;
      base += spec.shape.numel();
    });
  };
  point(params_, params_memory_.as<float>());
  point(grads_, grads_memory_.as<float>());
  float* base = statistics_memory_.as<float>();
  for_each_statistic(statistics_, config_, blocks_, [&](const std::string&, i64 C, float*& view) {
    view = base;
    base += C;
  });
  labels_ = labels_memory_.as<std::int32_t>();
  i64 max_channels = config_.stem_channels;
  for (const auto& b : blocks_) max_channels = std::max(max_channels, b.out_channels);
  batchnorm_sums_.resize(static_cast<std::size_t>(2 * max_channels + 1));
  reset_running_statistics();
}

void ResnetModel::reset_running_statistics() {
  for (const auto& view : statistics_views()) {
    const bool is_variance = view.name.ends_with("running_var");
    std::fill(view.values, view.values + view.numel, is_variance ? 1.0f : 0.0f);
  }
}

void ResnetModel::init_weights(std::uint64_t seed) {
  std::uint64_t k = 0;  // tensor index in storage order: the random stream
  for_each_parameter(params_, config_, blocks_, [&](const ParameterSpec& spec, float*& view) {
    float* p = view;
    const i64 n = spec.shape.numel();
    const CounterRng rng(seed, k++);
    switch (spec.init) {
      case ParameterInit::zeros: std::fill(p, p + n, 0.0f); break;
      case ParameterInit::ones: std::fill(p, p + n, 1.0f); break;
      case ParameterInit::kaiming_normal_fan_out:
#pragma omp parallel for schedule(static)
        for (i64 i = 0; i < n; ++i) {
          p[i] = static_cast<float>(spec.scale * rng.normal(static_cast<std::uint64_t>(i)));
        }
        break;
      case ParameterInit::linear_uniform:
        for (i64 i = 0; i < n; ++i) {
          const double u = rng.uniform(static_cast<std::uint64_t>(i));  // [0, 1)
          p[i] = static_cast<float>(spec.scale * (2.0 * u - 1.0));
        }
        break;
    }
  });
  reset_running_statistics();
}

void ResnetModel::reduce_batchnorm_sums(i64 C) {
  if (!batchnorm_reducer_) return;
  batchnorm_reducer_(std::span<double>(batchnorm_sums_.data(), static_cast<std::size_t>(2 * C + 1)));
}

void ResnetModel::gradient_ready(const float* first, i64 count) {
  if (gradient_ready_) gradient_ready_(first - grads_.stem_conv, count);
}

void ResnetModel::batchnorm_forward(float* out, const BatchStatistics& saved,
                                    const RunningStatistics& running, const float* inp,
                                    const BatchNormTensors& bn, const float* residual, bool relu,
                                    i64 N, i64 C, i64 HW, bool training) {
  if (training) {
    double* sums = batchnorm_sums_.data();
    k_->batchnorm2d_channel_sums(sums, inp, N, C, HW);
    sums[2 * C] = static_cast<double>(N * HW);
    reduce_batchnorm_sums(C);
    k_->batchnorm2d_statistics(saved.mean, saved.rstd, running.mean, running.var, sums,
                               sums[2 * C], C, kBatchNormMomentum, kBatchNormEps);
  } else {  // the running statistics, as batch statistics of the same shape
    for (i64 c = 0; c < C; ++c) {
      saved.mean[c] = running.mean[c];
      saved.rstd[c] = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(running.var[c]) + kBatchNormEps));
    }
  }
  k_->batchnorm2d_forward_apply(out, inp, saved.mean, saved.rstd, bn.weight, bn.bias, residual,
                                relu, N, C, HW);
}

void ResnetModel::batchnorm_backward(float* dinp, const BatchNormTensors& grad, const float* dout,
                                     const float* relu_out, const float* inp,
                                     const BatchNormTensors& bn, const BatchStatistics& saved,
                                     i64 N, i64 C, i64 HW) {
  double* sums = batchnorm_sums_.data();
  k_->batchnorm2d_backward_sums(sums, grad.weight, grad.bias, dout, relu_out, inp, saved.mean,
                                saved.rstd, N, C, HW);
  gradient_ready(grad.weight, 2 * C);  // weight and bias are adjacent: one range
  sums[2 * C] = static_cast<double>(N * HW);
  reduce_batchnorm_sums(C);
  k_->batchnorm2d_backward_apply(dinp, dout, relu_out, inp, bn.weight, saved.mean, saved.rstd,
                                 sums, sums[2 * C], N, C, HW);
}

// inp (N, IC, H, W) -> a.blocks[b].out (N, OC, OH, OW)
void ResnetModel::block_forward(std::size_t b, const float* inp, i64 N, bool training) {
  const ResnetBlockShape& s = blocks_[b];
  const BlockTensors& p = params_.blocks[b];
  const BlockRunningStatistics& r = statistics_.blocks[b];
  const BlockActivations& a = acts_.blocks[b];
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OH = s.out_size;
  const i64 OHW = OH * OH;

  // shortcut: x, or bn(conv1×1(x)) when the stride or the width changes
  const float* shortcut = inp;
  if (s.shortcut_conv) {
    k_->conv2d_forward(a.shortcut_conv, inp, p.shortcut_conv, nullptr, N, IC, H, H, OC, 1, 1,
                       s.stride, 0);
    batchnorm_forward(acts_.shortcut_bn_out, a.shortcut_bn, r.shortcut_bn, a.shortcut_conv,
                      p.shortcut_bn, nullptr, false, N, OC, OHW, training);
    shortcut = acts_.shortcut_bn_out;
  }
  // main path: relu(bn1(conv1(x))) -> relu(bn2(conv2(.)) + shortcut)
  k_->conv2d_forward(a.conv1, inp, p.conv1, nullptr, N, IC, H, H, OC, 3, 3, s.stride, 1);
  batchnorm_forward(a.relu1, a.bn1, r.bn1, a.conv1, p.bn1, nullptr, true, N, OC, OHW, training);
  k_->conv2d_forward(a.conv2, a.relu1, p.conv2, nullptr, N, OC, OH, OH, OC, 3, 3, 1, 1);
  batchnorm_forward(a.out, a.bn2, r.bn2, a.conv2, p.bn2, shortcut, true, N, OC, OHW, training);
}

float ResnetModel::forward(const float* images, const std::int32_t* labels, i64 N, bool training) {
  SB_CHECK(N >= 1 && N <= max_batch_, "resnet forward: N = {} outside [1, {}]", N, max_batch_);
  SB_CHECK(images != nullptr, "resnet forward: no images");
  const i64 classes = config_.classes;
  for (i64 i = 0; labels && i < N; ++i) {
    SB_CHECK(labels[i] >= 0 && labels[i] < classes,
             "resnet forward: label {} at {} outside [0, {})", labels[i], i, classes);
  }
  point_views(acts_, acts_memory_.as<float>(), config_, blocks_, N);
  const i64 IC = config_.image_channels, S = config_.image_size;
  std::copy(images, images + N * IC * S * S, acts_.images);
  if (labels) std::copy(labels, labels + N, labels_);
  last_N_ = N;
  backward_ready_ = training && labels != nullptr;

  const ParameterTensors& p = params_;
  ActivationTensors& a = acts_;
  // stem: relu(bn(conv(images)))
  const i64 C0 = config_.stem_channels, S0 = resnet_stem_output_size(config_);
  k_->conv2d_forward(a.stem_conv, a.images, p.stem_conv, nullptr, N, IC, S, S, C0,
                     config_.stem_kernel, config_.stem_kernel, config_.stem_stride,
                     config_.stem_kernel / 2);
  batchnorm_forward(a.stem_relu, a.stem_bn, statistics_.stem_bn, a.stem_conv, p.stem_bn, nullptr,
                    true, N, C0, S0 * S0, training);
  // the stages
  const float* x = a.stem_relu;  // (N, C, H, W), the input of the next block
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    block_forward(b, x, N, training);
    x = a.blocks[b].out;
  }
  // head: global average pool, linear
  const ResnetBlockShape& last = blocks_.back();
  const i64 features = last.out_channels;
  k_->global_avgpool_forward(a.pooled, x, N, features, last.out_size * last.out_size);
  k_->matmul_forward(a.logits, a.pooled, p.fc_weight, p.fc_bias, N, features, classes);

  if (!labels) return std::numeric_limits<float>::quiet_NaN();
  k_->crossentropy_forward(a.losses, a.probs, a.logits, labels_, N, classes);
  double sum = 0.0;
  for (i64 i = 0; i < N; ++i) sum += a.losses[i];
  return static_cast<float>(sum / static_cast<double>(N));
}

void ResnetModel::zero_grad() {
  std::memset(grads_memory_.data(), 0, static_cast<std::size_t>(grads_memory_.bytes()));
}

// dout (N, OC, OH, OW) -> dinp (N, IC, H, W) +=, this block's parameter gradients +=, each
// layer's reported as soon as it is final. inp is the block's forward input.
void ResnetModel::block_backward(std::size_t b, float* dinp, const float* dout, const float* inp,
                                 i64 N) {
  const ResnetBlockShape& s = blocks_[b];
  const BlockTensors& p = params_.blocks[b];
  const BlockTensors& g = grads_.blocks[b];
  const BlockActivations& a = acts_.blocks[b];
  const ActivationGradients& d = acts_grads_;
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OH = s.out_size;
  const i64 OHW = OH * OH, n = N * OC * OHW;

  // out = relu(bn2_out + shortcut): both branches see dout masked by out > 0
  batchnorm_backward(d.dconv2, g.bn2, dout, a.out, a.conv2, p.bn2, a.bn2, N, OC, OHW);
  if (s.shortcut_conv) {
    batchnorm_backward(d.dshortcut_conv, g.shortcut_bn, dout, a.out, a.shortcut_conv,
                       p.shortcut_bn, a.shortcut_bn, N, OC, OHW);
    k_->conv2d_backward(dinp, g.shortcut_conv, nullptr, d.dshortcut_conv, inp, p.shortcut_conv, N,
                        IC, H, H, OC, 1, 1, s.stride, 0);
    gradient_ready(g.shortcut_conv, OC * IC);
  } else {
    k_->relu_backward(dinp, a.out, dout, n);  // identity: straight to dinp
  }
  // main path, last layer first
  zero(d.drelu1, n);
  k_->conv2d_backward(d.drelu1, g.conv2, nullptr, d.dconv2, a.relu1, p.conv2, N, OC, OH, OH, OC, 3,
                      3, 1, 1);
  gradient_ready(g.conv2, OC * OC * 9);
  batchnorm_backward(d.dconv1, g.bn1, d.drelu1, a.relu1, a.conv1, p.bn1, a.bn1, N, OC, OHW);
  k_->conv2d_backward(dinp, g.conv1, nullptr, d.dconv1, inp, p.conv1, N, IC, H, H, OC, 3, 3,
                      s.stride, 1);
  gradient_ready(g.conv1, OC * IC * 9);
}

void ResnetModel::backward() {
  SB_CHECK(backward_ready_, "resnet backward needs a training forward with labels first");
  const i64 N = last_N_, classes = config_.classes;
  const ParameterTensors& p = params_;
  const ParameterTensors& g = grads_;
  const ActivationTensors& a = acts_;
  ActivationGradients& d = acts_grads_;
  point_views(d, acts_grads_memory_.as<float>(), config_, blocks_, N);

  // head: mean loss -> logits -> pooled features -> the last block's output
  const ResnetBlockShape& last = blocks_.back();
  const i64 features = last.out_channels, last_hw = last.out_size * last.out_size;
  zero(d.dlogits, N * classes);
  zero(d.dpooled, N * features);
  zero(d.dblock_out, N * features * last_hw);
  std::fill(d.dlosses, d.dlosses + N, static_cast<float>(1.0 / static_cast<double>(N)));
  k_->crossentropy_backward(d.dlogits, a.probs, labels_, d.dlosses, N, classes);
  k_->matmul_backward(d.dpooled, g.fc_weight, g.fc_bias, d.dlogits, a.pooled, p.fc_weight, N,
                      features, classes);
  gradient_ready(g.fc_weight, classes * features + classes);  // weight and bias are adjacent
  k_->global_avgpool_backward(d.dblock_out, d.dpooled, N, features, last_hw);

  // the blocks, last to first; dout is the gradient of block b's output, din of its input
  float* dout = d.dblock_out;
  float* din = d.dblock_in;
  for (std::size_t b = blocks_.size(); b-- > 0;) {
    const ResnetBlockShape& s = blocks_[b];
    const float* inp = b == 0 ? a.stem_relu : a.blocks[b - 1].out;
    zero(din, N * s.in_channels * s.in_size * s.in_size);
    block_backward(b, din, dout, inp, N);
    std::swap(din, dout);
  }

  // stem, dout = d(stem_relu); the images need no gradient
  const i64 IC = config_.image_channels, S = config_.image_size;
  const i64 C0 = config_.stem_channels, S0 = resnet_stem_output_size(config_);
  batchnorm_backward(d.dconv1, g.stem_bn, dout, a.stem_relu, a.stem_conv, p.stem_bn, a.stem_bn, N,
                     C0, S0 * S0);
  k_->conv2d_backward(nullptr, g.stem_conv, nullptr, d.dconv1, a.images, p.stem_conv, N, IC, S, S,
                      C0, config_.stem_kernel, config_.stem_kernel, config_.stem_stride,
                      config_.stem_kernel / 2);
  gradient_ready(g.stem_conv, C0 * IC * config_.stem_kernel * config_.stem_kernel);
}

std::vector<ParameterView> ResnetModel::parameter_views() {
  std::vector<ParameterView> views;
  float* grad = grads_memory_.as<float>();
  for_each_parameter(params_, config_, blocks_, [&](const ParameterSpec& spec, float*& param) {
    views.push_back({spec.name, param, grad, spec.shape.numel()});
    grad += spec.shape.numel();
  });
  return views;
}

std::vector<StatisticsView> ResnetModel::statistics_views() {
  std::vector<StatisticsView> views;
  for_each_statistic(statistics_, config_, blocks_,
                     [&](const std::string& name, i64 C, float*& values) {
                       views.push_back({name, values, C});
                     });
  return views;
}

std::vector<optim::ParameterSlice> ResnetModel::parameter_slices() {
  std::vector<optim::ParameterSlice> slices;
  for (auto& view : parameter_views()) {
    slices.push_back({std::move(view.name), view.param, view.grad, view.numel, true});
  }
  return slices;
}

}  // namespace sb::resnet
