// SPDX-License-Identifier: Apache-2.0
// resnet-mini forward and backward as a fixed sequence of kernel calls over named views, in the
// manner of llm.c's train_gpt2.c. Leaves out the data loader and the training loop.
#include "models/resnet/resnet.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet_layout.hpp"

namespace sb::resnet {

using i64 = std::int64_t;
using detail::count_bytes;
using detail::for_each_parameter;
using detail::for_each_statistic;
using detail::Layout;
using detail::layout_of;
using detail::point_views;
using detail::recompute_scratch_bytes;
using detail::whole_network;

namespace {

constexpr i64 kFloat = static_cast<i64>(sizeof(float));

}  // namespace

std::vector<ParameterSpec> resnet_parameter_specs(const ResnetConfig& config) {
  ParameterTensors views{};
  std::vector<ParameterSpec> specs;
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  for_each_parameter(views, whole_network(config, blocks),
                     [&](const ParameterSpec& spec, float*&, std::uint64_t) { specs.push_back(spec); });
  return specs;
}

i64 resnet_partition_parameter_count(const ResnetConfig& config, ResnetPartition partition) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  ParameterTensors views{};
  i64 count = 0;
  for_each_parameter(views, layout_of(config, blocks, partition, Recompute::none),
                     [&](const ParameterSpec& spec, float*&, std::uint64_t) { count += spec.shape.numel(); });
  return count;
}

std::vector<i64> resnet_partition_parameter_tensors(const ResnetConfig& config, ResnetPartition partition) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  ParameterTensors views{};
  std::vector<i64> tensors;
  for_each_parameter(views, layout_of(config, blocks, partition, Recompute::none),
                     [&](const ParameterSpec& spec, float*&, std::uint64_t) { tensors.push_back(spec.shape.numel()); });
  return tensors;
}

i64 resnet_partition_statistics_count(const ResnetConfig& config, ResnetPartition partition) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  RunningStatisticsTensors views{};
  i64 count = 0;
  for_each_statistic(views, layout_of(config, blocks, partition, Recompute::none),
                     [&](const std::string&, i64 C, float*&) { count += C; });
  return count;
}

template <class S>
i64 resnet_slot_activation_bytes(const ResnetConfig& config, i64 N, ResnetPartition partition, Recompute recompute) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  return count_bytes<ActivationTensorsT<S>>(layout_of(config, blocks, partition, recompute), N);
}

template <class S>
i64 resnet_activation_bytes(const ResnetConfig& config, i64 N, ResnetPartition partition,
                            i64 slots, Recompute recompute) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  const Layout l = layout_of(config, blocks, partition, recompute);
  return slots * count_bytes<ActivationTensorsT<S>>(l, N) +
         static_cast<i64>(sizeof(S)) * N * l.max_image_floats() + recompute_scratch_bytes<S>(l, N);
}

template <class S>
i64 resnet_activation_gradient_bytes(const ResnetConfig& config, i64 N, ResnetPartition partition) {
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  return count_bytes<ActivationGradientsT<S>>(layout_of(config, blocks, partition), N);
}

template <class S>
ResnetModelT<S>::ResnetModelT(const ResnetConfig& config, i64 max_batch, kernels::Backend backend,
                              MemoryTracker& tracker, ResnetPartition partition, i64 activation_slots,
                              kernels::KernelRecorder* recorder, Residency gradient_residency,
                              Recompute recompute, Residency master_residency, Residency parameter_residency,
                              ResnetParameterStorageT<S> storage)
    : config_(config),
      blocks_(),
      backend_(backend),
      k_(backend, tracker, recorder),
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
  SB_USER_CHECK(activation_slots > 0, "resnet '{}': activation slots must be positive, got {}",
                config_.name, activation_slots);
  blocks_ = resnet_blocks(config_);
  const Layout l = layout_of(config_, blocks_, partition, recompute);
  first_unit_ = l.first;
  end_unit_ = l.end;
  full_recompute_ = l.full_recompute;
  input_floats_ = l.in_floats(l.first);
  output_floats_ = l.out_floats(l.end - 1);
  for (i64 unit = l.first; unit < l.end; ++unit) {  // each unit's parameters, in storage order
    unit_offsets_.push_back(parameter_count_);
    parameter_count_ += resnet_partition_parameter_count(config_, {unit, unit + 1});
  }
  unit_offsets_.push_back(parameter_count_);
  if (l.stem() && l.head()) {
    SB_CHECK(parameter_count_ == resnet_parameter_count(config_),
             "resnet parameter shapes sum to {}, layers give {}", parameter_count_,
             resnet_parameter_count(config_));
  }
  statistics_count_ = resnet_partition_statistics_count(config_, {l.first, l.end});

  constexpr bool mixed = !std::is_same_v<S, float>;
  i64 max_channels = config_.stem_channels;
  for (const auto& b : blocks_) max_channels = std::max(max_channels, b.out_channels);
  batchnorm_sums_.resize(static_cast<std::size_t>(2 * max_channels + 1));
  slots_.resize(static_cast<std::size_t>(activation_slots));
  if (!k_.runs_kernels()) {  // records its calls only: nothing held, every view on the placeholder
    std::byte* placeholder = recording_placeholder_.data();
    for_each_parameter(params_, l, [&](const ParameterSpec&, S*& view, std::uint64_t) {
      view = reinterpret_cast<S*>(placeholder);
    });
    for_each_parameter(grads_, l, [&](const ParameterSpec&, float*& view, std::uint64_t) {
      view = reinterpret_cast<float*>(placeholder);
    });
    for_each_statistic(statistics_, l, [&](const std::string&, i64, float*& view) {
      view = reinterpret_cast<float*>(placeholder);
    });
    for (Slot& slot : slots_) slot.labels = reinterpret_cast<std::int32_t*>(placeholder);
    shortcut_bn_out_ = reinterpret_cast<S*>(placeholder);
    return;
  }
  if (storage.params) {  // a chunk's share of the caller's buffers
    SB_CHECK(storage.grads && storage.statistics && (!mixed || storage.master),
             "resnet: given storage without gradients, running statistics or (16-bit) master weights");
    params_base_ = storage.params;
    grads_base_ = storage.grads;
    statistics_base_ = storage.statistics;
    master_base_ = mixed ? storage.master : reinterpret_cast<float*>(storage.params);
  } else {
    params_memory_ = TrackedBuffer(tracker, MemoryCategory::params, static_cast<i64>(sizeof(S)) * parameter_count_,
                                   mixed ? "resnet 16-bit params" : "resnet params", Device::cpu, parameter_residency);
    if (mixed)  // counted with the optimizer state, as the ZeRO paper's K = 12 bytes per parameter
      master_memory_ = TrackedBuffer(tracker, MemoryCategory::optimizer, kFloat * parameter_count_,
                                     "resnet fp32 master params", Device::cpu, master_residency);
    grads_memory_ = TrackedBuffer(tracker, gradient_buffer_category(gradient_residency), kFloat * parameter_count_,
                                  "resnet grads", Device::cpu, gradient_residency);
    // Running statistics are model state saved with the weights but never trained: charged to
    // params, kept out of parameter_slices().
    statistics_memory_ = TrackedBuffer(tracker, MemoryCategory::params, kFloat * statistics_count_,
                                       "resnet running statistics");
    params_base_ = params_memory_.as<S>();
    grads_base_ = grads_memory_.as<float>();
    statistics_base_ = statistics_memory_.as<float>();
    master_base_ = mixed ? master_memory_.as<float>() : params_memory_.as<float>();
  }
  const i64 slot_bytes = count_bytes<ActivationTensorsT<S>>(l, max_batch);
  acts_memory_ = TrackedBuffer(tracker, MemoryCategory::activations, activation_slots * slot_bytes,
                               "resnet activations");
  scratch_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                                  static_cast<i64>(sizeof(S)) * max_batch * l.max_image_floats(),
                                  "resnet shortcut scratch");
  recompute_memory_ = TrackedBuffer(tracker, MemoryCategory::activations, recompute_scratch_bytes<S>(l, max_batch),
                                    "resnet one block's recomputed tensors");
  const i64 label_count = l.head() ? activation_slots * max_batch : 0;
  labels_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                                 label_count * static_cast<i64>(sizeof(std::int32_t)),
                                 "resnet labels");
  acts_grads_memory_ = TrackedBuffer(tracker, MemoryCategory::workspace,
                                     count_bytes<ActivationGradientsT<S>>(l, max_batch),
                                     "resnet activation grads");
  SB_CHECK(acts_memory_.bytes() + scratch_memory_.bytes() + recompute_memory_.bytes() ==
               resnet_activation_bytes<S>(config_, max_batch, partition, activation_slots, recompute),
           "resnet activation layout and resnet_activation_bytes disagree");

  const auto point = [&]<class T>(ParameterTensorsT<T>& views, T* base) {
    for_each_parameter(views, l, [&](const ParameterSpec& spec, T*& view, std::uint64_t) {
      view = base;
      base += spec.shape.numel();
    });
  };
  point(params_, params_base_);
  if constexpr (mixed)
    point(master_, master_base_);
  else
    master_ = params_;
  point(grads_, grads_base_);
  float* base = statistics_base_;
  for_each_statistic(statistics_, l, [&](const std::string&, i64 C, float*& view) {
    view = base;
    base += C;
  });
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (l.head()) slots_[i].labels = labels_memory_.as<std::int32_t>() + i * max_batch;
  }
  shortcut_bn_out_ = scratch_memory_.as<S>();
  reset_running_statistics();
}

template <class S>
FlatRange ResnetModelT<S>::unit_parameter_range(i64 unit) const {
  SB_CHECK(unit >= first_unit_ && unit < end_unit_, "resnet: unit {} outside this partition's [{}, {})", unit,
           first_unit_, end_unit_);
  const auto i = static_cast<std::size_t>(unit - first_unit_);
  return {unit_offsets_[i], unit_offsets_[i + 1] - unit_offsets_[i]};
}

template <class S>
ResnetModelT<S>::HeldUnit::HeldUnit(const ResnetModelT& model, i64 unit, i64 next)
    : gather_(model.k_.runs_kernels() ? model.unit_gather_ : nullptr), params_base_(model.params_base_) {
  if (!gather_) return;
  range_ = model.unit_parameter_range(unit);
  // The gather's buffer is read only (kernels take the weights as const); the views are S*.
  gathered_ = const_cast<S*>(reinterpret_cast<const S*>(gather_->gather({&range_, 1})));
  if (next >= 0) {
    const FlatRange prefetched = model.unit_parameter_range(next);
    gather_->prefetch({&prefetched, 1});
  }
}

template <class S>
S* ResnetModelT<S>::HeldUnit::w(S* in_params) const {
  if (!gather_ || in_params == nullptr) return in_params;
  const i64 offset = in_params - params_base_;
  SB_CHECK(offset >= range_.offset && offset < range_.offset + range_.count,
           "resnet: a weight at parameter {} read outside the gathered unit [{}, {})", offset, range_.offset,
           range_.offset + range_.count);
  return gathered_ + (offset - range_.offset);
}

template <class S>
BlockTensorsT<S> ResnetModelT<S>::HeldUnit::block(const BlockTensorsT<S>& p) const {
  return {w(p.conv1), bn(p.bn1), w(p.conv2), bn(p.bn2), w(p.shortcut_conv), bn(p.shortcut_bn)};
}

template <class S>
ResnetModelT<S>::HeldUnit::~HeldUnit() {
  if (gather_) gather_->release({&range_, 1});
}

template <class S>
i64 ResnetModelT<S>::slot_activation_bytes() const {
  return acts_memory_.bytes() / activation_slots() + labels_memory_.bytes() / activation_slots();
}

template <class S>
void ResnetModelT<S>::reset_running_statistics() {
  for (const auto& view : statistics_views()) {
    const bool is_variance = view.name.ends_with("running_var");
    std::fill(view.values, view.values + view.numel, is_variance ? 1.0f : 0.0f);
  }
}

template <class S>
void ResnetModelT<S>::init_weights(std::uint64_t seed) {
  const Layout l{config_, blocks_, first_unit_, end_unit_, full_recompute_};
  // k: the tensor's index over the whole network, its random stream
  for_each_parameter(master_, l, [&](const ParameterSpec& spec, float*& view, std::uint64_t k) {
    float* p = view;
    const i64 n = spec.shape.numel();
    const CounterRng rng(seed, k);
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
  sync_storage_parameters();
  reset_running_statistics();
}

template <class S>
void ResnetModelT<S>::sync_storage_parameters() {
  if (unit_gather_) return;  // ZeRO-3: the shards' owner rounds its 16-bit shard; units are gathered from it
  if constexpr (!std::is_same_v<S, float>) k_.narrow(params_base_, master_base_, parameter_count_);
}

template <class S>
void ResnetModelT<S>::narrow_to_storage(std::span<const float> in, S* out) const {
  if constexpr (std::is_same_v<S, float>)
    std::copy(in.begin(), in.end(), out);
  else
    k_.narrow(out, in.data(), static_cast<i64>(in.size()));
}

template <class S>
void ResnetModelT<S>::reduce_batchnorm_sums(i64 C) {
  if (!batchnorm_reducer_) return;
  batchnorm_reducer_(std::span<double>(batchnorm_sums_.data(), static_cast<std::size_t>(2 * C + 1)));
}

template <class S>
void ResnetModelT<S>::gradient_ready(const float* first, i64 count) {
  if (gradient_ready_) gradient_ready_(first - grads_base_, count);
}

template <class S>
void ResnetModelT<S>::batchnorm_forward(S* out, const BatchStatistics& saved, const RunningStatistics& running,
                                        const S* inp, const BatchNormTensorsT<S>& bn, const S* residual,
                                        bool relu, i64 N, i64 C, i64 HW, bool training) {
  if (training) {
    double* sums = batchnorm_sums_.data();
    k_.batchnorm2d_channel_sums(sums, inp, N, C, HW);
    sums[2 * C] = static_cast<double>(N * HW);
    reduce_batchnorm_sums(C);
    k_.batchnorm2d_statistics(saved.mean, saved.rstd, running.mean, running.var, sums,
                               sums[2 * C], C, kBatchNormMomentum, kBatchNormEps);
  } else {  // the running statistics, as batch statistics of the same shape
    for (i64 c = 0; c < C; ++c) {
      saved.mean[c] = running.mean[c];
      saved.rstd[c] = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(running.var[c]) + kBatchNormEps));
    }
  }
  k_.batchnorm2d_forward_apply(out, inp, saved.mean, saved.rstd, bn.weight, bn.bias, residual,
                                relu, N, C, HW);
}

template <class S>
void ResnetModelT<S>::batchnorm_backward(S* dinp, const BatchNormTensors& grad, const S* dout, const S* relu_out,
                                         const S* inp, const BatchNormTensorsT<S>& bn, const BatchStatistics& saved,
                                         i64 N, i64 C, i64 HW) {
  double* sums = batchnorm_sums_.data();
  k_.batchnorm2d_backward_sums(sums, grad.weight, grad.bias, dout, relu_out, inp, saved.mean,
                                saved.rstd, N, C, HW);
  gradient_ready(grad.weight, 2 * C);  // weight and bias are adjacent: one range
  sums[2 * C] = static_cast<double>(N * HW);
  reduce_batchnorm_sums(C);
  k_.batchnorm2d_backward_apply(dinp, dout, relu_out, inp, bn.weight, saved.mean, saved.rstd,
                                 sums, sums[2 * C], N, C, HW);
}

// inp (N, IC, H, W) -> a.blocks[b].out (N, OC, OH, OW)
template <class S>
void ResnetModelT<S>::block_forward(const ActivationTensorsT<S>& acts, std::size_t b, const BlockTensorsT<S>& p,
                                    const S* inp, i64 N, bool training) {
  const ResnetBlockShape& s = blocks_[b];
  const BlockRunningStatistics& r = statistics_.blocks[b];
  const BlockActivationsT<S>& a = acts.blocks[b];
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OH = s.out_size;
  const i64 OHW = OH * OH;

  // shortcut: x, or bn(conv1×1(x)) when the stride or the width changes
  const S* shortcut = inp;
  if (s.shortcut_conv) {
    k_.conv2d_forward(a.shortcut_conv, inp, p.shortcut_conv, nullptr, N, IC, H, H, OC, 1, 1,
                       s.stride, 0);
    batchnorm_forward(shortcut_bn_out_, a.shortcut_bn, r.shortcut_bn, a.shortcut_conv,
                      p.shortcut_bn, nullptr, false, N, OC, OHW, training);
    shortcut = shortcut_bn_out_;
  }
  // main path: relu(bn1(conv1(x))) -> relu(bn2(conv2(.)) + shortcut)
  k_.conv2d_forward(a.conv1, inp, p.conv1, nullptr, N, IC, H, H, OC, 3, 3, s.stride, 1);
  batchnorm_forward(a.relu1, a.bn1, r.bn1, a.conv1, p.bn1, nullptr, true, N, OC, OHW, training);
  k_.conv2d_forward(a.conv2, a.relu1, p.conv2, nullptr, N, OC, OH, OH, OC, 3, 3, 1, 1);
  batchnorm_forward(a.out, a.bn2, r.bn2, a.conv2, p.bn2, shortcut, true, N, OC, OHW, training);
}

template <class S>
void ResnetModelT<S>::point_recomputed_views(ActivationTensorsT<S>& a, i64 N) {
  if (!full_recompute_) return;
  std::byte* base = k_.runs_kernels() ? recompute_memory_.as<std::byte>() : recording_placeholder_.data();
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    if (!has_block(b)) continue;
    i64 offset = 0;
    detail::for_each_recomputed_view(a.blocks[b], blocks_[b], N, [&](S*& view, i64 numel) {
      view = reinterpret_cast<S*>(base + offset);
      if (k_.runs_kernels()) offset += numel * static_cast<i64>(sizeof(S));
    });
  }
}

// The block's forward again up to what its backward reads (bn2's output is the kept `out`),
// with the batch statistics of the training forward: the same values, no reduction.
template <class S>
void ResnetModelT<S>::recompute_block(const ActivationTensorsT<S>& acts, std::size_t b, const BlockTensorsT<S>& p,
                                      const S* inp, i64 N) {
  const ResnetBlockShape& s = blocks_[b];
  const BlockActivationsT<S>& a = acts.blocks[b];
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OH = s.out_size;
  if (s.shortcut_conv)
    k_.conv2d_forward(a.shortcut_conv, inp, p.shortcut_conv, nullptr, N, IC, H, H, OC, 1, 1, s.stride, 0);
  k_.conv2d_forward(a.conv1, inp, p.conv1, nullptr, N, IC, H, H, OC, 3, 3, s.stride, 1);
  k_.batchnorm2d_forward_apply(a.relu1, a.conv1, a.bn1.mean, a.bn1.rstd, p.bn1.weight, p.bn1.bias, nullptr, true, N,
                               OC, OH * OH);
  k_.conv2d_forward(a.conv2, a.relu1, p.conv2, nullptr, N, OC, OH, OH, OC, 3, 3, 1, 1);
}

template <class S>
float ResnetModelT<S>::forward(i64 slot, const float* input, const std::int32_t* labels, i64 N, bool training) {
  return forward_from(slot, input, labels, N, training);
}

template <class S>
float ResnetModelT<S>::forward_stage(i64 slot, const S* input, const std::int32_t* labels, i64 N, bool training) {
  SB_CHECK(!has_stem(), "resnet forward_stage: the partition with the stem reads float images (forward)");
  return forward_from(slot, input, labels, N, training);
}

template <class S>
template <class In>
float ResnetModelT<S>::forward_from(i64 slot, const In* input, const std::int32_t* labels, i64 N, bool training) {
  SB_CHECK(slot >= 0 && slot < activation_slots(), "resnet forward: slot {} of {}", slot,
           activation_slots());
  SB_CHECK(N >= 1 && N <= max_batch_, "resnet forward: N = {} outside [1, {}]", N, max_batch_);
  SB_CHECK(input != nullptr, "resnet forward: no input");
  const i64 classes = config_.classes;
  const bool head = has_head();
  for (i64 i = 0; head && labels && i < N; ++i) {
    SB_CHECK(labels[i] >= 0 && labels[i] < classes,
             "resnet forward: label {} at {} outside [0, {})", labels[i], i, classes);
  }
  Slot& st = slots_[static_cast<std::size_t>(slot)];
  const Layout l{config_, blocks_, first_unit_, end_unit_, full_recompute_};
  const bool runs = k_.runs_kernels();
  if (runs)
    point_views(st.acts, acts_memory_.as<std::byte>() + slot * count_bytes<ActivationTensorsT<S>>(l, max_batch_), l, N);
  else
    point_views(st.acts, recording_placeholder_.data(), l, N, false);
  point_recomputed_views(st.acts, N);
  if (!runs) {  // only recording: nothing to copy
  } else if constexpr (std::is_same_v<In, S>) {
    std::copy(input, input + N * input_floats_, st.acts.input);
  } else {
    k_.narrow(st.acts.input, input, N * input_floats_);
  }
  if (head && labels && runs) std::copy(labels, labels + N, st.labels);
  st.N = N;
  st.backward_ready = training && (!head || labels != nullptr);
  last_slot_ = slot;

  const ParameterTensorsT<S>& p = params_;
  const ActivationTensorsT<S>& a = st.acts;
  const S* x = a.input;  // (N, C, H, W), the input of the next unit
  if (has_stem()) {          // relu(bn(conv(images)))
    k_.begin_unit("stem");
    const HeldUnit weights(*this, 0, next_unit(0, +1));
    const i64 IC = config_.image_channels, size = config_.image_size;
    const i64 C0 = config_.stem_channels, S0 = resnet_stem_output_size(config_);
    k_.conv2d_forward(a.stem_conv, a.input, weights.w(p.stem_conv), nullptr, N, IC, size, size, C0,
                       config_.stem_kernel, config_.stem_kernel, config_.stem_stride,
                       config_.stem_kernel / 2);
    batchnorm_forward(a.stem_relu, a.stem_bn, statistics_.stem_bn, a.stem_conv, weights.bn(p.stem_bn),
                      nullptr, true, N, C0, S0 * S0, training);
    x = a.stem_relu;
  }
  for (std::size_t b = 0; b < blocks_.size(); ++b) {  // the stages
    if (!has_block(b)) continue;
    k_.begin_unit("block");
    const auto unit = static_cast<i64>(b) + 1;
    const HeldUnit weights(*this, unit, next_unit(unit, +1));
    block_forward(a, b, weights.block(p.blocks[b]), x, N, training);
    x = a.blocks[b].out;
  }
  st.output = x;
  if (!head) return std::numeric_limits<float>::quiet_NaN();

  // head: global average pool, linear
  k_.begin_unit("head");
  const ResnetBlockShape& last = blocks_.back();
  const i64 features = last.out_channels;
  k_.global_avgpool_forward(a.pooled, x, N, features, last.out_size * last.out_size);
  {
    const HeldUnit weights(*this, end_unit_ - 1, -1);
    k_.matmul_forward(a.logits, a.pooled, weights.w(p.fc_weight), weights.w(p.fc_bias), N, features, classes);
  }
  st.output = a.logits;
  if (!labels) return std::numeric_limits<float>::quiet_NaN();
  k_.crossentropy_forward(a.losses, a.probs, a.logits, st.labels, N, classes);
  if (!runs) return std::numeric_limits<float>::quiet_NaN();
  double sum = 0.0;
  for (i64 i = 0; i < N; ++i) sum += a.losses[i];
  if constexpr (std::is_same_v<S, float>) {
    if (soft_targets_.teacher_logits)
      sum = (1 - soft_targets_.alpha) * sum + soft_targets_.alpha * soft_target_loss_sum(a.logits, soft_targets_, N, classes);
  }
  return static_cast<float>(sum / static_cast<double>(N));
}

template <class S>
const S* ResnetModelT<S>::output(i64 slot) const {
  SB_CHECK(!has_head(), "resnet output: a partition with the head outputs the loss");
  SB_CHECK(slot >= 0 && slot < activation_slots(), "resnet output: slot {} of {}", slot,
           activation_slots());
  return slots_[static_cast<std::size_t>(slot)].output;
}

template <class S>
const S* ResnetModelT<S>::logits() const {
  SB_CHECK(has_head(), "resnet logits: this partition has no head");
  return slots_[static_cast<std::size_t>(last_slot_)].acts.logits;
}

template <class S>
const S* ResnetModelT<S>::input_gradient() const {
  SB_CHECK(!has_stem(), "resnet input_gradient: the images need no gradient");
  SB_CHECK(input_gradient_ != nullptr, "resnet input_gradient: no backward yet");
  return input_gradient_;
}

template <class S>
void ResnetModelT<S>::zero_grad() {
  if (grads_base_) std::fill(grads_base_, grads_base_ + parameter_count_, 0.0f);
}

// dout (N, OC, OH, OW) -> dinp (N, IC, H, W) +=, this block's parameter gradients +=, each
// layer's reported as soon as it is final. inp is the block's forward input.
template <class S>
void ResnetModelT<S>::block_backward(const ActivationTensorsT<S>& acts, std::size_t b, const BlockTensorsT<S>& p,
                                     S* dinp, const S* dout, const S* inp, i64 N) {
  const ResnetBlockShape& s = blocks_[b];
  const BlockTensors& g = grads_.blocks[b];
  const BlockActivationsT<S>& a = acts.blocks[b];
  const ActivationGradientsT<S>& d = acts_grads_;
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OH = s.out_size;
  const i64 OHW = OH * OH, n = N * OC * OHW;

  // out = relu(bn2_out + shortcut): both branches see dout masked by out > 0
  batchnorm_backward(d.dconv2, g.bn2, dout, a.out, a.conv2, p.bn2, a.bn2, N, OC, OHW);
  if (s.shortcut_conv) {
    batchnorm_backward(d.dshortcut_conv, g.shortcut_bn, dout, a.out, a.shortcut_conv,
                       p.shortcut_bn, a.shortcut_bn, N, OC, OHW);
    k_.conv2d_backward(dinp, g.shortcut_conv, nullptr, d.dshortcut_conv, inp, p.shortcut_conv, N,
                        IC, H, H, OC, 1, 1, s.stride, 0);
    gradient_ready(g.shortcut_conv, OC * IC);
  } else {
    k_.relu_backward(dinp, a.out, dout, n);  // identity: straight to dinp
  }
  // main path, last layer first
  k_.zero(d.drelu1, n * static_cast<i64>(sizeof(S)));
  k_.conv2d_backward(d.drelu1, g.conv2, nullptr, d.dconv2, a.relu1, p.conv2, N, OC, OH, OH, OC, 3,
                      3, 1, 1);
  gradient_ready(g.conv2, OC * OC * 9);
  batchnorm_backward(d.dconv1, g.bn1, d.drelu1, a.relu1, a.conv1, p.bn1, a.bn1, N, OC, OHW);
  k_.conv2d_backward(dinp, g.conv1, nullptr, d.dconv1, inp, p.conv1, N, IC, H, H, OC, 3, 3,
                      s.stride, 1);
  gradient_ready(g.conv1, OC * IC * 9);
}

template <class S>
void ResnetModelT<S>::backward(i64 slot, const S* doutput) {
  SB_CHECK(slot >= 0 && slot < activation_slots(), "resnet backward: slot {} of {}", slot,
           activation_slots());
  const Slot& st = slots_[static_cast<std::size_t>(slot)];
  SB_CHECK(st.backward_ready, "resnet backward needs a training forward with labels first");
  SB_CHECK(has_head() == (doutput == nullptr),
           "resnet backward: a partition {} the head takes {} output gradient",
           has_head() ? "with" : "without", has_head() ? "no" : "an");
  const i64 N = st.N, classes = config_.classes;
  const ParameterTensorsT<S>& p = params_;
  const ParameterTensors& g = grads_;
  const ActivationTensorsT<S>& a = st.acts;
  ActivationGradientsT<S>& d = acts_grads_;
  const Layout l{config_, blocks_, first_unit_, end_unit_, full_recompute_};
  const bool runs = k_.runs_kernels();
  point_views(d, runs ? acts_grads_memory_.as<std::byte>() : recording_placeholder_.data(), l, N, runs);
  constexpr i64 kS = static_cast<i64>(sizeof(S));

  if (has_head()) {  // mean loss -> logits -> pooled features -> the last block's output
    k_.begin_unit("head");
    const ResnetBlockShape& last = blocks_.back();
    const i64 features = last.out_channels, last_hw = last.out_size * last.out_size;
    k_.zero(d.dlogits, N * classes * kS);
    k_.zero(d.dpooled, N * features * kS);
    k_.zero(d.dblock_out, N * features * last_hw * kS);
    if (runs) std::fill(d.dlosses, d.dlosses + N, static_cast<float>(loss_scale_ / static_cast<double>(N)));
    k_.crossentropy_backward(d.dlogits, a.probs, st.labels, d.dlosses, N, classes);
    if constexpr (std::is_same_v<S, float>) {
      if (soft_targets_.teacher_logits)
        soft_target_backward(d.dlogits, a.logits, soft_targets_, N, classes, loss_scale_ / static_cast<double>(N));
    }
    {
      const HeldUnit weights(*this, end_unit_ - 1, next_unit(end_unit_ - 1, -1));
      k_.matmul_backward(d.dpooled, g.fc_weight, g.fc_bias, d.dlogits, a.pooled, weights.w(p.fc_weight), N,
                         features, classes);
    }
    gradient_ready(g.fc_weight, classes * features + classes);  // weight and bias are adjacent
    k_.global_avgpool_backward(d.dblock_out, d.dpooled, N, features, last_hw);
  } else if (runs) {
    std::copy(doutput, doutput + N * output_floats_, d.dblock_out);
  }

  // the blocks, last to first; dout is the gradient of block b's output, din of its input
  S* dout = d.dblock_out;
  S* din = d.dblock_in;
  for (std::size_t b = blocks_.size(); b-- > 0;) {
    if (!has_block(b)) continue;
    const ResnetBlockShape& s = blocks_[b];
    const bool first_here = static_cast<i64>(b) + 1 == first_unit_;
    const S* inp = first_here ? a.input : b == 0 ? a.stem_relu : a.blocks[b - 1].out;
    k_.begin_unit("block");
    const auto unit = static_cast<i64>(b) + 1;
    const HeldUnit held(*this, unit, next_unit(unit, -1));
    const BlockTensorsT<S> weights = held.block(p.blocks[b]);
    if (full_recompute_) recompute_block(a, b, weights, inp, N);
    k_.zero(din, N * s.in_channels * s.in_size * s.in_size * kS);
    block_backward(a, b, weights, din, dout, inp, N);
    std::swap(din, dout);
  }
  if (!has_stem()) {  // dout: the gradient of this partition's input
    input_gradient_ = dout;
    return;
  }

  // stem, dout = d(stem_relu); the images need no gradient
  k_.begin_unit("stem");
  const i64 IC = config_.image_channels, size = config_.image_size;
  const i64 C0 = config_.stem_channels, S0 = resnet_stem_output_size(config_);
  const HeldUnit weights(*this, 0, -1);
  batchnorm_backward(d.dconv1, g.stem_bn, dout, a.stem_relu, a.stem_conv, weights.bn(p.stem_bn), a.stem_bn, N,
                     C0, S0 * S0);
  k_.conv2d_backward(nullptr, g.stem_conv, nullptr, d.dconv1, a.input, weights.w(p.stem_conv), N, IC, size, size,
                      C0, config_.stem_kernel, config_.stem_kernel, config_.stem_stride,
                      config_.stem_kernel / 2);
  gradient_ready(g.stem_conv, C0 * IC * config_.stem_kernel * config_.stem_kernel);
}

template <class S>
std::vector<ParameterView> ResnetModelT<S>::parameter_views() {
  std::vector<ParameterView> views;
  float* grad = grads_base_;
  const Layout l{config_, blocks_, first_unit_, end_unit_, full_recompute_};
  for_each_parameter(master_, l, [&](const ParameterSpec& spec, float*& param, std::uint64_t) {
    views.push_back({spec.name, param, grad, spec.shape.numel()});
    grad += spec.shape.numel();
  });
  return views;
}

template <class S>
std::vector<StatisticsView> ResnetModelT<S>::statistics_views() {
  std::vector<StatisticsView> views;
  const Layout l{config_, blocks_, first_unit_, end_unit_, full_recompute_};
  for_each_statistic(statistics_, l, [&](const std::string& name, i64 C, float*& values) {
    views.push_back({name, values, C});
  });
  return views;
}

template <class S>
std::vector<optim::ParameterSlice> ResnetModelT<S>::parameter_slices() {
  std::vector<optim::ParameterSlice> slices;
  for (auto& view : parameter_views()) {
    slices.push_back({std::move(view.name), view.param, view.grad, view.numel, true});
  }
  return slices;
}

template <class S>
void ResnetModelT<S>::set_soft_targets(const SoftTargets& targets) {
  constexpr bool fp32 = std::is_same_v<S, float>;
  SB_CHECK(fp32 || targets.teacher_logits == nullptr, "knowledge distillation runs on fp32 storage only");
  SB_CHECK(targets.temperature > 0 && targets.alpha >= 0 && targets.alpha <= 1, "temperature {}, alpha {}",
           targets.temperature, targets.alpha);
  soft_targets_ = targets;
}

#define SB_INSTANTIATE_RESNET(S)                                                                      \
  template class ResnetModelT<S>;                                                                    \
  template i64 resnet_activation_bytes<S>(const ResnetConfig&, i64, ResnetPartition, i64, Recompute); \
  template i64 resnet_slot_activation_bytes<S>(const ResnetConfig&, i64, ResnetPartition, Recompute); \
  template i64 resnet_activation_gradient_bytes<S>(const ResnetConfig&, i64, ResnetPartition);
SB_INSTANTIATE_RESNET(float)
SB_INSTANTIATE_RESNET(bf16)
SB_INSTANTIATE_RESNET(fp16)
#undef SB_INSTANTIATE_RESNET

}  // namespace sb::resnet
