// SPDX-License-Identifier: Apache-2.0
// GPT-2 forward and backward as a fixed sequence of kernel calls over named views, llm.c's
// train_gpt2.c on a runtime-chosen kernel backend. Leaves out the data loader and the loop.
#include "models/gpt/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "core/check.hpp"
#include "core/device_memory.hpp"
#include "core/rng.hpp"

namespace sb::gpt {

using i64 = std::int64_t;

template <class S>
std::array<S**, kParameterTensorCount> ParameterTensorsT<S>::members() {
  return {&wte,     &wpe,  &ln1w, &ln1b, &qkvw,    &qkvb,    &attprojw, &attprojb,
          &ln2w,    &ln2b, &fcw,  &fcb,  &fcprojw, &fcprojb, &lnfw,     &lnfb};
}

std::array<ParameterSpec, kParameterTensorCount> gpt_parameter_specs(const GptConfig& config) {
  const i64 L = config.layers, C = config.channels;
  using enum ParameterInit;
  return {{
      {"wte", {config.vocab, C}, true, normal_0_02},
      {"wpe", {config.max_seq_len, C}, true, normal_0_02},
      {"ln1w", {L, C}, false, ones},
      {"ln1b", {L, C}, false, zeros},
      {"qkvw", {L, 3 * C, C}, true, normal_0_02},
      {"qkvb", {L, 3 * C}, false, zeros},
      {"attprojw", {L, C, C}, true, normal_0_02},
      {"attprojb", {L, C}, false, zeros},
      {"ln2w", {L, C}, false, ones},
      {"ln2b", {L, C}, false, zeros},
      {"fcw", {L, 4 * C, C}, true, normal_0_02},
      {"fcb", {L, 4 * C}, false, zeros},
      {"fcprojw", {L, C, 4 * C}, true, normal_0_02},
      {"fcprojb", {L, C}, false, zeros},
      {"lnfw", {C}, false, ones},
      {"lnfb", {C}, false, zeros},
  }};
}

namespace {

// The two layouts of ActivationTensorsT: one micro-batch's slot, and the recompute scratch that
// holds one block of the tensors the recompute mode drops (shared by every slot).
enum class ActivationLayout { slot, recompute_scratch };

// Which per-block tensors a recompute mode drops after the forward: full every one but the
// block's output, selective the attention probabilities (Korthikanti et al.'s 5as/h term).
bool drops_block_internals(Recompute r) { return r == Recompute::full; }
bool drops_attention_probabilities(Recompute r) { return r != Recompute::none; }

// Calls f(view, numel, tp_split) for every activation tensor in storage order: the one place
// that knows the activation layout, used both to size the allocation and to point the views.
// tp_split: the tensor is cut over the tp group (1/t of the unsplit one). Views are S* or
// float* (statistics).
template <class S, class F>
void for_each_view(ActivationTensorsT<S>& a, const GptShard& s, i64 B, i64 T, F&& f,
                   ActivationLayout layout = ActivationLayout::slot) {
  const bool scratch = layout == ActivationLayout::recompute_scratch;
  const i64 C = s.C, BT = B * T;
  // the residual stream's token rows (1/t of them, and cut over tp, under sequence parallelism)
  const i64 R = s.residual_rows(BT);
  const bool sp = s.sequence_parallel;
  // layers of a per-block tensor: the stage's in a slot when kept, one in the scratch when dropped
  const auto layers = [&](bool dropped) -> i64 { return scratch ? (dropped ? 1 : 0) : (dropped ? 0 : s.L); };
  const i64 L = layers(drops_block_internals(s.recompute));
  const i64 La = layers(drops_attention_probabilities(s.recompute));
  const i64 Lout = scratch ? 0 : s.L;  // block outputs: always kept (the next block's input)
  const i64 E = scratch ? 0 : 1;
  const i64 H = s.head && !scratch ? 1 : 0;
  const i64 G = scratch && sp ? 1 : 0;  // the gathered rows: one block's, in the scratch
  f(a.encoded, E * R * C, sp);
  f(a.ln1, L * R * C, sp);
  f(a.ln1_mean, L * R, sp);
  f(a.ln1_rstd, L * R, sp);
  f(a.qkv, L * BT * 3 * s.C_tp, true);
  f(a.att, La * B * s.NH_tp * T * T, true);
  f(a.atty, L * BT * s.C_tp, true);
  f(a.attproj, L * R * C, sp);
  f(a.residual2, L * R * C, sp);
  f(a.ln2, L * R * C, sp);
  f(a.ln2_mean, L * R, sp);
  f(a.ln2_rstd, L * R, sp);
  f(a.fch, L * BT * s.F_tp, true);
  f(a.fch_gelu, L * BT * s.F_tp, true);
  f(a.fcproj, L * R * C, sp);
  f(a.residual3, Lout * R * C, sp);
  f(a.lnf, H * R * C, sp);
  f(a.lnf_mean, H * R, sp);
  f(a.lnf_rstd, H * R, sp);
  f(a.logits, H * BT * s.V_tp, true);
  f(a.probs, H * BT * s.V_tp, true);
  f(a.losses, H * BT, false);
  f(a.ce_stats, s.tp_size > 1 ? H * 3 * BT : 0, false);
  f(a.gathered, G * BT * C, false);
}

// The same for the backward scratch. The per-block tensors come last, from dresidual_in
// on, so zeroing them before each block is one memset.
template <class S, class F>
void for_each_view(ActivationGradientsT<S>& g, const GptShard& s, i64 B, i64 T, F&& f,
                   ActivationLayout = ActivationLayout::slot) {
  const i64 C = s.C, BT = B * T, H = s.head ? 1 : 0;
  const i64 R = s.residual_rows(BT);
  const bool sp = s.sequence_parallel;
  f(g.dlosses, H * BT, false);
  f(g.dlogits, H * BT * s.V_tp, true);
  f(g.dlnf, H * R * C, sp);
  f(g.dresidual_out, R * C, sp);
  f(g.dresidual_in, R * C, sp);
  f(g.dln1, R * C, sp);
  f(g.dqkv, BT * 3 * s.C_tp, true);
  f(g.datty, BT * s.C_tp, true);
  f(g.dattproj, R * C, sp);
  f(g.dresidual2, R * C, sp);
  f(g.dln2, R * C, sp);
  f(g.dfch, BT * s.F_tp, true);
  f(g.dfch_gelu, BT * s.F_tp, true);
  f(g.dfcproj, R * C, sp);
  f(g.dall_rows, sp ? BT * C : 0, false);
}

// Each view starts at a multiple of 4 bytes, so float statistics after an odd count of 16-bit
// values stay aligned (no padding at all in fp32).
constexpr i64 kViewAlignment = 4;

i64 aligned(i64 bytes) { return (bytes + kViewAlignment - 1) / kViewAlignment * kViewAlignment; }

template <class Tensors>
GptActivationBytes count_bytes(const GptShard& s, i64 B, i64 T, ActivationLayout layout = ActivationLayout::slot) {
  Tensors views{};
  GptActivationBytes bytes;
  for_each_view(views, s, B, T, [&](auto*& view, i64 numel, bool split) {
    const i64 n = aligned(numel * static_cast<i64>(sizeof(*view)));
    bytes.total += n;
    if (split) bytes.tp_split += n;
  }, layout);
  return bytes;
}

// Points every view into base for the layout at (B, T) and returns the bytes used. Not laid out
// (a model that only records its kernel calls): every view at base, its placeholder.
template <class Tensors>
i64 point_views(Tensors& views, std::byte* base, const GptShard& s, i64 B, i64 T, bool laid_out = true,
                ActivationLayout layout = ActivationLayout::slot) {
  i64 n = 0;
  for_each_view(views, s, B, T, [&](auto*& view, i64 numel, bool) {
    view = reinterpret_cast<std::remove_reference_t<decltype(view)>>(base + (laid_out ? n : 0));
    n += aligned(numel * static_cast<i64>(sizeof(*view)));
  }, layout);
  return n;
}

// Bytes of the layout at (B, T) from view `first` up to view `end` (none: to the layout's end).
template <class Tensors, class First, class End = First>
i64 layout_bytes(const GptShard& s, i64 B, i64 T, First Tensors::*first, End Tensors::*end = nullptr) {
  Tensors views{};
  i64 n = 0, begin = -1, stop = -1;
  for_each_view(views, s, B, T, [&](auto*& view, i64 numel, bool) {
    if (static_cast<void*>(&view) == static_cast<void*>(&(views.*first))) begin = n;
    if (end && static_cast<void*>(&view) == static_cast<void*>(&(views.*end))) stop = n;
    n += aligned(numel * static_cast<i64>(sizeof(*view)));
  });
  return (stop < 0 ? n : stop) - begin;
}

template <class S>
void point_parameter_views(ParameterTensorsT<S>& views, S* base, const GptConfig& config, const GptShard& shard,
                           bool laid_out = true) {
  const auto shapes = gpt_shard_shapes(config, shard);
  const auto members = views.members();
  for (int k = 0; k < kParameterTensorCount; ++k) {
    *members[static_cast<std::size_t>(k)] = base;
    if (laid_out) base += shapes[static_cast<std::size_t>(k)].numel();
  }
}

constexpr i64 kFloat = static_cast<i64>(sizeof(float));

GptShard whole_model(const GptConfig& config) { return resolve_gpt_partition(config, {}); }

}  // namespace

template <class S>
i64 gpt_activation_bytes(const GptConfig& config, i64 B, i64 T, Recompute recompute) {
  GptShard shard = whole_model(config);
  shard.recompute = recompute;
  return count_bytes<ActivationTensorsT<S>>(shard, B, T).total;
}

template <class S>
i64 gpt_activation_gradient_bytes(const GptConfig& config, i64 B, i64 T) {
  return count_bytes<ActivationGradientsT<S>>(whole_model(config), B, T).total;
}

template <class S>
GptActivationBytes gpt_shard_activation_bytes(const GptShard& shard, i64 B, i64 T) {
  return count_bytes<ActivationTensorsT<S>>(shard, B, T);
}

template <class S>
GptActivationBytes gpt_shard_recompute_scratch_bytes(const GptShard& shard, i64 B, i64 T) {
  return count_bytes<ActivationTensorsT<S>>(shard, B, T, ActivationLayout::recompute_scratch);
}

template <class S>
i64 gpt_shard_activation_gradient_bytes(const GptShard& shard, i64 B, i64 T) {
  return count_bytes<ActivationGradientsT<S>>(shard, B, T).total;
}

template <class S>
GptModelT<S>::GptModelT(const GptConfig& config, i64 batch, i64 seq_len, kernels::Backend backend,
                        MemoryTracker& tracker, GptPartition partition, i64 appended_parameters,
                        kernels::KernelRecorder* recorder, GptParameterStorageT<S> storage)
    : config_(config),
      shard_(resolve_gpt_partition(config, partition)),
      tp_(std::move(partition.tp)),
      backend_(backend),
      device_(kernels::memory_device(backend)),
      k_(backend, tracker, recorder),
      max_batch_(batch),
      max_seq_len_(seq_len),
      parameter_count_(gpt_shard_parameter_count(config, shard_)),
      appended_parameters_(appended_parameters) {
  SB_CHECK(appended_parameters >= 0 && (appended_parameters == 0 || shard_.whole()),
           "gpt: {} appended parameters need the whole model on one rank", appended_parameters);
  SB_USER_CHECK(batch > 0, "gpt '{}': batch must be positive, got {}", config_.name, batch);
  SB_USER_CHECK(seq_len > 0 && seq_len <= config_.max_seq_len,
                "gpt '{}': seq_len must be in [1, max_seq_len = {}], got {}", config_.name,
                config_.max_seq_len, seq_len);
  if (shard_.whole() && shard_.L == config_.layers) {
    i64 spec_count = 0;
    for (const auto& spec : gpt_parameter_specs(config_)) spec_count += spec.shape.numel();
    SB_CHECK(spec_count == parameter_count_ && spec_count == gpt_parameter_count(config_),
             "gpt parameter shapes sum to {}, formula gives {}", spec_count,
             gpt_parameter_count(config_));
  }

  constexpr bool mixed = !std::is_same_v<S, float>;
  const i64 slots = shard_.activation_slots;
  slots_.resize(static_cast<std::size_t>(slots));
  if (!k_.runs_kernels()) {  // records its calls only: nothing held, every view on the placeholder
    std::byte* placeholder = recording_placeholder_.data();
    point_parameter_views(params_, reinterpret_cast<S*>(placeholder), config_, shard_, false);
    point_parameter_views(master_, reinterpret_cast<float*>(placeholder), config_, shard_, false);
    point_parameter_views(grads_, reinterpret_cast<float*>(placeholder), config_, shard_, false);
    for (Slot& slot : slots_) {
      slot.base = placeholder;
      slot.tokens = slot.targets = reinterpret_cast<std::int32_t*>(placeholder);
    }
    return;
  }
  const i64 slot_bytes = gpt_shard_activation_bytes<S>(shard_, batch, seq_len).total;
  const i64 flat = parameter_count_ + appended_parameters_;
  const bool owned = storage.params == nullptr;
  SB_CHECK(owned == (storage.grads == nullptr) && (owned || !mixed || storage.master != nullptr),
           "gpt: parameter storage given in part");
  const bool gathered = partition.parameter_residency == Residency::resident_pages;
  SB_CHECK(!gathered || owned, "gpt: gathered (ZeRO-3) parameters are the model's own");
  if (owned) {
    params_memory_ = TrackedBuffer(tracker, gathered ? MemoryCategory::comm : MemoryCategory::params,
                                   static_cast<i64>(sizeof(S)) * flat,
                                   mixed ? "gpt 16-bit params" : gathered ? "gpt gathered params" : "gpt params",
                                   device_, partition.parameter_residency);
    if (mixed)  // counted with the optimizer state, as the ZeRO paper's K = 12 bytes per parameter
      master_memory_ = TrackedBuffer(tracker, MemoryCategory::optimizer, kFloat * flat,
                                     "gpt fp32 master params", device_, partition.master_residency);
    grads_memory_ = TrackedBuffer(tracker, gradient_buffer_category(partition.gradient_residency), kFloat * flat,
                                  "gpt grads", device_,
                                  partition.gradient_residency);
    storage = {params_memory_.as<S>(), master_memory_.as<float>(), grads_memory_.as<float>()};
  }
  acts_memory_ = TrackedBuffer(tracker, MemoryCategory::activations, slots * slot_bytes,
                               "gpt activations", device_);
  inputs_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                                 slots * 2 * batch * seq_len * static_cast<i64>(sizeof(std::int32_t)),
                                 "gpt tokens, targets", device_);
  if (const i64 scratch_bytes = recompute_scratch_bytes(); scratch_bytes > 0)
    recompute_memory_ = TrackedBuffer(tracker, MemoryCategory::activations, scratch_bytes,
                                      "gpt one block's scratch (recomputed, gathered rows)", device_);
  acts_grads_memory_ =
      TrackedBuffer(tracker, MemoryCategory::workspace,
                    gpt_shard_activation_gradient_bytes<S>(shard_, batch, seq_len), "gpt activation grads", device_);
  if (mixed && shard_.tp_size > 1) {
    const i64 rows = batch * seq_len + (shard_.sequence_parallel ? shard_.residual_rows(batch * seq_len) : 0);
    tp_widened_memory_ = TrackedBuffer(tracker, MemoryCategory::comm, kFloat * rows * config_.channels,
                                       "gpt tp all-reduce in fp32", device_);
  }
  point_parameter_views(params_, storage.params, config_, shard_);
  if constexpr (mixed)
    point_parameter_views(master_, storage.master, config_, shard_);
  else
    master_ = params_;
  point_parameter_views(grads_, storage.grads, config_, shard_);
  for (i64 s = 0; s < slots; ++s) {
    Slot& slot = slots_[static_cast<std::size_t>(s)];
    slot.base = acts_memory_.as<std::byte>() + s * slot_bytes;
    slot.tokens = inputs_memory_.as<std::int32_t>() + s * 2 * batch * seq_len;
    slot.targets = slot.tokens + batch * seq_len;
  }
}

template <class S>
void GptModelT<S>::init_weights(std::uint64_t seed) {
  const auto specs = gpt_parameter_specs(config_);
  const auto shapes = gpt_shard_shapes(config_, shard_);
  const auto members = master_.members();
  const bool whole = shard_.whole() && shard_.layer_begin == 0 && shard_.L == config_.layers;
  for (int k = 0; k < kParameterTensorCount; ++k) {
    const ParameterSpec& spec = specs[static_cast<std::size_t>(k)];
    float* target = *members[static_cast<std::size_t>(k)];
    const i64 n = shapes[static_cast<std::size_t>(k)].numel();
    if (device_ != Device::cpu) host_staging_.resize(static_cast<std::size_t>(n));
    float* p = device_ == Device::cpu ? target : host_staging_.data();  // filled on the host
    const CounterRng rng(seed, static_cast<std::uint64_t>(k));
    const GptShard& shard = shard_;
    switch (spec.init) {
      case ParameterInit::zeros: std::fill(p, p + n, 0.0f); break;
      case ParameterInit::ones: std::fill(p, p + n, 1.0f); break;
      case ParameterInit::normal_0_02:
#pragma omp parallel for schedule(static)
        for (i64 i = 0; i < n; ++i) {
          const i64 global = whole ? i : gpt_unsplit_index(shard, k, i);
          p[i] = static_cast<float>(0.02 * rng.normal(static_cast<std::uint64_t>(global)));
        }
        break;
    }
    copy_device_bytes(target, device_, p, Device::cpu, static_cast<std::size_t>(n) * sizeof(float));
  }
  sync_storage_parameters();
}

template <class S>
void GptModelT<S>::sync_storage_parameters() {
  if (unit_gather_) return;  // ZeRO-3: the shards' owner rounds its 16-bit shard; units are gathered from it
  if constexpr (!std::is_same_v<S, float>) k_.narrow(params_.wte, master_.wte, static_cast<i64>(flat_size()));
}

template <class S>
void GptModelT<S>::narrow_to_storage(std::span<const float> in, S* out) const {
  if constexpr (std::is_same_v<S, float>)
    copy_device_bytes(out, device_, in.data(), device_, in.size_bytes());
  else
    k_.narrow(out, in.data(), static_cast<i64>(in.size()));
}

template <class S>
std::vector<FlatRange> GptModelT<S>::unit_parameter_ranges(Unit unit, i64 l) const {
  SB_CHECK(unit != Unit::block || (l >= 0 && l < shard_.L), "gpt: block {} outside [0, {})", l, shard_.L);
  const auto shapes = gpt_shard_shapes(config_, shard_);
  // tensor k's range: the whole tensor, or for the (L, ...) tensors (ln1w .. fcprojb) layer l's
  constexpr int kFirstLayered = 2, kLastLayered = 13, kWte = 0, kWpe = 1, kLnfw = 14, kLnfb = 15;
  std::array<FlatRange, kParameterTensorCount> tensors{};
  i64 offset = 0;
  for (int k = 0; k < kParameterTensorCount; ++k) {
    const i64 numel = shapes[static_cast<std::size_t>(k)].numel();
    tensors[static_cast<std::size_t>(k)] = {offset, numel};
    offset += numel;
  }
  std::vector<FlatRange> ranges;
  const auto add = [&](int k) {
    if (tensors[static_cast<std::size_t>(k)].count > 0) ranges.push_back(tensors[static_cast<std::size_t>(k)]);
  };
  switch (unit) {
    case Unit::embedding: add(kWte); add(kWpe); break;
    case Unit::head: add(kWte); add(kLnfw); add(kLnfb); break;
    case Unit::block:
      for (int k = kFirstLayered; k <= kLastLayered; ++k) {
        const FlatRange whole = tensors[static_cast<std::size_t>(k)];
        const i64 per_layer = whole.count / shard_.L;
        if (per_layer > 0) ranges.push_back({whole.offset + l * per_layer, per_layer});
      }
      break;
  }
  return ranges;
}

template <class S>
GptModelT<S>::HeldUnit::HeldUnit(GptModelT& model, Unit unit, i64 l, std::optional<std::pair<Unit, i64>> next)
    : gather_(model.k_.runs_kernels() ? model.unit_gather_ : nullptr), params_base_(model.params_.wte) {
  if (!gather_) return;
  ranges_ = model.unit_parameter_ranges(unit, l);
  gathered_ = reinterpret_cast<const S*>(gather_->gather(ranges_));
  if (next) gather_->prefetch(model.unit_parameter_ranges(next->first, next->second));
}

template <class S>
const S* GptModelT<S>::HeldUnit::w(const S* in_params) const {
  if (!gather_) return in_params;
  const i64 offset = in_params - params_base_;
  i64 packed = 0;
  for (const FlatRange& r : ranges_) {
    if (offset >= r.offset && offset < r.offset + r.count) return gathered_ + packed + (offset - r.offset);
    packed += r.count;
  }
  SB_CHECK(false, "gpt: a weight at parameter {} read outside the gathered unit", offset);
}

template <class S>
GptModelT<S>::HeldUnit::~HeldUnit() {
  if (gather_) gather_->release(ranges_);
}

template <class S>
i64 GptModelT<S>::slot_activation_bytes() const {
  return gpt_shard_activation_bytes<S>(shard_, max_batch_, max_seq_len_).total +
         2 * max_batch_ * max_seq_len_ * static_cast<i64>(sizeof(std::int32_t));
}

template <class S>
i64 GptModelT<S>::recompute_scratch_bytes() const {
  return gpt_shard_recompute_scratch_bytes<S>(shard_, max_batch_, max_seq_len_).total;
}

template <class S>
typename GptModelT<S>::Slot& GptModelT<S>::slot_at(i64 slot) {
  SB_CHECK(slot >= 0 && slot < shard_.activation_slots, "gpt: activation slot {} outside [0, {})",
           slot, shard_.activation_slots);
  return slots_[static_cast<std::size_t>(slot)];
}

// A 16-bit tensor is summed in fp32 (widened, all-reduced, rounded once): no rounding per hop.
template <class S>
void GptModelT<S>::tp_all_reduce_sum(S* data, i64 count) {
  if (shard_.tp_size == 1 || !k_.runs_kernels()) return;
  if constexpr (std::is_same_v<S, float>) {
    tp_.all_reduce_sum({data, static_cast<std::size_t>(count)});
  } else {
    float* wide = tp_widened_memory_.as<float>();
    SB_CHECK(count * kFloat <= tp_widened_memory_.bytes(), "gpt: tp all-reduce of {} values", count);
    k_.widen(wide, data, count);
    tp_.all_reduce_sum({wide, static_cast<std::size_t>(count)});
    k_.narrow(data, wide, count);
  }
}

template <class S>
const S* GptModelT<S>::tp_all_gather_rows(S* all, const S* mine, i64 BT) {
  if (!shard_.sequence_parallel) return mine;
  if (!k_.runs_kernels()) return all;
  const auto bytes = static_cast<std::size_t>(shard_.residual_rows(BT) * shard_.C) * sizeof(S);
  tp_.all_gather({reinterpret_cast<const std::byte*>(mine), bytes},
                 {reinterpret_cast<std::byte*>(all), bytes * static_cast<std::size_t>(shard_.tp_size)});
  return all;
}

// A 16-bit partial is summed in fp32 (widened, reduce-scattered, this rank's rows rounded once).
template <class S>
void GptModelT<S>::tp_reduce_scatter_rows(S* mine, const S* partial, i64 BT) {
  if (!k_.runs_kernels()) return;
  const i64 all = BT * shard_.C, n = shard_.residual_rows(BT) * shard_.C;
  const auto size = [](i64 count) { return static_cast<std::size_t>(count); };
  if constexpr (std::is_same_v<S, float>) {
    tp_.reduce_scatter_sum({partial, size(all)}, {mine, size(n)});
  } else {
    float* wide = tp_widened_memory_.as<float>();
    SB_CHECK((all + n) * kFloat <= tp_widened_memory_.bytes(), "gpt: tp reduce-scatter of {} values", all);
    k_.widen(wide, partial, all);
    tp_.reduce_scatter_sum({wide, size(all)}, {wide + all, size(n)});
    k_.narrow(mine, wide + all, n);
  }
}

template <class S>
void GptModelT<S>::sum_partial_rows(S* out, const S* partial, i64 BT) {
  if (shard_.sequence_parallel)
    tp_reduce_scatter_rows(out, partial, BT);
  else
    tp_all_reduce_sum(out, BT * shard_.C);
}

template <class S>
float GptModelT<S>::forward(const std::int32_t* tokens, const std::int32_t* targets, i64 B, i64 T) {
  return forward_stage(0, tokens, nullptr, targets, B, T);
}

template <class S>
float GptModelT<S>::forward_stage(i64 slot_index, const std::int32_t* tokens, const S* input,
                                  const std::int32_t* targets, i64 B, i64 T) {
  return forward_slot(slot_index, tokens, input, targets, B, T, true);
}

template <class S>
const S* GptModelT<S>::forward_hidden(const std::int32_t* tokens, i64 B, i64 T) {
  SB_CHECK(shard_.whole(), "gpt: forward_hidden needs the whole model on one rank");
  forward_slot(0, tokens, nullptr, nullptr, B, T, false);
  return slots_.front().acts.lnf;
}

template <class S>
void GptModelT<S>::backward_hidden(const S* dhidden) {
  SB_CHECK(shard_.whole() && dhidden != nullptr, "gpt: backward_hidden needs the whole model and d(hidden)");
  backward_slot(0, nullptr, dhidden);
}

template <class S>
void GptModelT<S>::point_recompute_scratch(i64 B, i64 T) {
  const bool runs = k_.runs_kernels();
  std::byte* base = runs && recompute_memory_.bytes() > 0 ? recompute_memory_.as<std::byte>()
                                                          : recording_placeholder_.data();
  point_views(recomputed_, base, shard_, B, T, runs, ActivationLayout::recompute_scratch);
}

template <class S>
typename GptModelT<S>::BlockActivations GptModelT<S>::block_activations(const Slot& slot, i64 l) const {
  const GptShard& s = shard_;
  const i64 B = slot.B, T = slot.T, BT = B * T, C = s.C, Ct = s.C_tp, F = s.F_tp;
  const i64 R = s.residual_rows(BT);
  const ActivationTensorsT<S>& a = slot.acts;
  const ActivationTensorsT<S>& r = recomputed_;
  const bool internals = drops_block_internals(s.recompute);
  const bool probabilities = drops_attention_probabilities(s.recompute);
  // layer l of the slot's tensor, or the scratch's one layer when the mode drops it
  const auto at = [l](auto* kept, auto* scratch, bool dropped, i64 per_layer) {
    return dropped ? scratch : kept + l * per_layer;
  };
  return {at(a.ln1, r.ln1, internals, R * C),
          at(a.ln1_mean, r.ln1_mean, internals, R),
          at(a.ln1_rstd, r.ln1_rstd, internals, R),
          at(a.qkv, r.qkv, internals, BT * 3 * Ct),
          at(a.att, r.att, probabilities, B * s.NH_tp * T * T),
          at(a.atty, r.atty, internals, BT * Ct),
          at(a.attproj, r.attproj, internals, R * C),
          at(a.residual2, r.residual2, internals, R * C),
          at(a.ln2, r.ln2, internals, R * C),
          at(a.ln2_mean, r.ln2_mean, internals, R),
          at(a.ln2_rstd, r.ln2_rstd, internals, R),
          at(a.fch, r.fch, internals, BT * F),
          at(a.fch_gelu, r.fch_gelu, internals, BT * F),
          at(a.fcproj, r.fcproj, internals, R * C)};
}

template <class S>
void GptModelT<S>::forward_block(i64 l, const BlockActivations& b, const S* residual, S* residual_out, i64 B,
                                 i64 T, const HeldUnit& held) {
  const GptShard& s = shard_;
  const i64 C = s.C, NH = s.NH_tp, Ct = s.C_tp, F = s.F_tp, BT = B * T;
  const bool tp_lead = s.tp_rank == 0;  // adds the replicated terms before a partial-sum reduce
  // this block's weights (this rank's shard of them), where a ZeRO-3 gather put them
  const ParameterTensorsT<S>& p = params_;
  const S* ln1w = held.w(p.ln1w + l * C);
  const S* ln1b = held.w(p.ln1b + l * C);
  const S* qkvw = held.w(p.qkvw + l * 3 * Ct * C);
  const S* qkvb = held.w(p.qkvb + l * 3 * Ct);
  const S* attprojw = held.w(p.attprojw + l * C * Ct);
  const S* attprojb = held.w(p.attprojb + l * C);
  const S* ln2w = held.w(p.ln2w + l * C);
  const S* ln2b = held.w(p.ln2b + l * C);
  const S* fcw = held.w(p.fcw + l * F * C);
  const S* fcb = held.w(p.fcb + l * F);
  const S* fcprojw = held.w(p.fcprojw + l * C * F);
  const S* fcprojb = held.w(p.fcprojb + l * C);

  // Row-parallel linears: each rank's partial product, the bias on tp rank 0 only (so it
  // counts once in the sum), then the sum over the tp group (Megatron's g): all-reduced, or
  // under sequence parallelism reduce-scattered into this rank's R token rows, whose
  // LayerNorm output is all-gathered before the next column-parallel linear. A recomputation
  // makes the same collectives in the same order on every tp rank.
  const i64 R = s.residual_rows(BT);
  S* scratch = recomputed_.gathered;  // (B, T, C) under sequence parallelism
  const auto all_rows = [&](const S* mine) { return tp_all_gather_rows(scratch, mine, BT); };
  k_.layernorm_forward(b.ln1, b.ln1_mean, b.ln1_rstd, residual, ln1w, ln1b, R, C);
  k_.matmul_forward(b.qkv, all_rows(b.ln1), qkvw, qkvb, BT, C, 3 * Ct);
  k_.attention_forward(b.atty, b.att, b.qkv, B, T, Ct, NH);
  S* attproj = partial_rows_target(b.attproj, scratch);
  k_.matmul_forward(attproj, b.atty, attprojw, tp_lead ? attprojb : nullptr, BT, Ct, C);
  sum_partial_rows(b.attproj, attproj, BT);
  k_.residual_forward(b.residual2, residual, b.attproj, R * C);
  k_.layernorm_forward(b.ln2, b.ln2_mean, b.ln2_rstd, b.residual2, ln2w, ln2b, R, C);
  k_.matmul_forward(b.fch, all_rows(b.ln2), fcw, fcb, BT, C, F);
  k_.gelu_forward(b.fch_gelu, b.fch, BT * F);
  S* fcproj = partial_rows_target(b.fcproj, scratch);
  k_.matmul_forward(fcproj, b.fch_gelu, fcprojw, tp_lead ? fcprojb : nullptr, BT, F, C);
  sum_partial_rows(b.fcproj, fcproj, BT);
  if (residual_out) k_.residual_forward(residual_out, b.residual2, b.fcproj, R * C);
}

template <class S>
float GptModelT<S>::forward_slot(i64 slot_index, const std::int32_t* tokens, const S* input,
                                 const std::int32_t* targets, i64 B, i64 T, bool lm_head) {
  SB_CHECK(B >= 1 && B <= max_batch_, "gpt forward: B = {} outside [1, {}]", B, max_batch_);
  SB_CHECK(T >= 1 && T <= max_seq_len_, "gpt forward: T = {} outside [1, {}]", T, max_seq_len_);
  const GptShard& s = shard_;
  SB_CHECK(s.embedding ? tokens != nullptr : input != nullptr,
           "gpt forward: a stage {} embedding needs {}", s.embedding ? "with" : "without",
           s.embedding ? "tokens" : "an input (B, T, C)");
  Slot& slot = slot_at(slot_index);
  const i64 L = s.L, C = s.C, V = config_.vocab, Vr = s.V_tp;
  const i64 BT = B * T, R = s.residual_rows(BT);
  SB_USER_CHECK(!s.sequence_parallel || BT % s.tp_size == 0,
                "gpt forward: sequence parallelism splits the micro-batch's {} × {} = {} token rows over tp = {}; "
                "they do not divide", B, T, BT, s.tp_size);
  const bool read_targets = s.head && targets != nullptr;
  for (i64 i = 0; i < BT; ++i) {
    SB_CHECK(!tokens || !s.embedding || (tokens[i] >= 0 && tokens[i] < V),
             "gpt forward: token {} at {} outside [0, {})", tokens[i], i, V);
    SB_CHECK(!read_targets || (targets[i] >= 0 && targets[i] < V),
             "gpt forward: target {} at {} outside [0, {})", targets[i], i, V);
  }
  const std::size_t token_bytes = static_cast<std::size_t>(BT) * sizeof(std::int32_t);
  const bool runs = k_.runs_kernels();
  if (s.embedding && runs) copy_device_bytes(slot.tokens, device_, tokens, Device::cpu, token_bytes);
  if (read_targets && runs) copy_device_bytes(slot.targets, device_, targets, Device::cpu, token_bytes);
  slot.B = B;
  slot.T = T;
  slot.forwarded = true;
  slot.has_targets = read_targets;
  point_views(slot.acts, slot.base, s, B, T, runs);
  point_recompute_scratch(B, T);

  const ParameterTensorsT<S>& p = params_;
  ActivationTensorsT<S>& a = slot.acts;
  const bool tp = s.tp_size > 1;
  const bool tp_lead = s.tp_rank == 0;  // adds the replicated terms before a partial-sum reduce
  if (s.embedding) k_.begin_unit("embedding");
  S* scratch = recomputed_.gathered;  // (B, T, C) under sequence parallelism
  using Next = std::optional<std::pair<Unit, i64>>;
  const Next after_blocks = s.head ? Next{{Unit::head, 0}} : std::nullopt;
  const auto after_block = [&](i64 l) { return l + 1 < L ? Next{{Unit::block, l + 1}} : after_blocks; };
  std::optional<HeldUnit> embedding_weights;
  if (s.embedding) embedding_weights.emplace(*this, Unit::embedding, 0, L > 0 ? Next{{Unit::block, 0}} : after_blocks);
  if (!s.embedding) {
    if (runs) copy_device_bytes(a.encoded, device_, input, device_, static_cast<std::size_t>(R * C) * sizeof(S));
  } else if (!tp) {
    k_.embedding_forward(a.encoded, slot.tokens, embedding_weights->w(p.wte), embedding_weights->w(p.wpe), B, T, C);
  } else {  // vocabulary-parallel lookup: zero rows off the shard, wpe once, then the sum
    S* encoded = partial_rows_target(a.encoded, scratch);
    k_.embedding_shard_forward(encoded, slot.tokens, embedding_weights->w(p.wte),
                                tp_lead ? embedding_weights->w(p.wpe) : nullptr, s.vocab_begin, Vr, B, T, C);
    sum_partial_rows(a.encoded, encoded, BT);
  }
  embedding_weights.reset();
  for (i64 l = 0; l < L; ++l) {
    k_.begin_unit("block");
    const HeldUnit weights(*this, Unit::block, l, after_block(l));
    const S* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * R * C;  // (R, C): (B,T,C) without sp
    forward_block(l, block_activations(slot, l), residual, a.residual3 + l * R * C, B, T, weights);
  }
  if (!s.head) return std::numeric_limits<float>::quiet_NaN();

  k_.begin_unit("head");
  const HeldUnit head_weights(*this, Unit::head, 0, std::nullopt);
  const S* last_residual = a.residual3 + (L - 1) * R * C;  // (R, C)
  k_.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last_residual, head_weights.w(p.lnfw), head_weights.w(p.lnfb),
                       R, C);
  if (!lm_head) return std::numeric_limits<float>::quiet_NaN();
  const S* lnf = tp_all_gather_rows(scratch, a.lnf, BT);  // (B,T,C)
  k_.matmul_forward(a.logits, lnf, head_weights.w(p.wte), nullptr, BT, C, Vr);  // head tied to wte (V_r,C)

  if (!read_targets) return std::numeric_limits<float>::quiet_NaN();
  if (!tp) {
    k_.crossentropy_forward(a.losses, a.probs, a.logits, slot.targets, BT, V);
  } else {  // vocabulary-parallel cross-entropy: three row statistics reduced, logits never gathered
    float* row_max = a.ce_stats;
    float* sumexp = runs ? a.ce_stats + BT : a.ce_stats;  // only recording: all on the placeholder
    float* target_logit = runs ? a.ce_stats + 2 * BT : a.ce_stats;
    k_.crossentropy_shard_max(row_max, a.logits, BT, Vr);
    tp_.all_reduce_max({row_max, static_cast<std::size_t>(BT)});
    k_.crossentropy_shard_partials(sumexp, target_logit, a.logits, row_max, slot.targets,
                                    s.vocab_begin, BT, Vr);
    tp_.all_reduce_sum({sumexp, static_cast<std::size_t>(2 * BT)});  // sumexp, target_logit: adjacent, float
    k_.crossentropy_shard_finish(a.losses, a.probs, a.logits, row_max, sumexp, target_logit,
                                  BT, Vr);
  }
  if (!runs) return std::numeric_limits<float>::quiet_NaN();
  const float* losses = a.losses;  // (B, T), read on the host
  if (device_ != Device::cpu) {
    host_staging_.resize(static_cast<std::size_t>(BT));
    copy_device_bytes(host_staging_.data(), Device::cpu, a.losses, device_, static_cast<std::size_t>(BT) * sizeof(float));
    losses = host_staging_.data();
  }
  double sum = 0.0;
  for (i64 i = 0; i < BT; ++i) sum += losses[i];
  return static_cast<float>(sum / static_cast<double>(BT));
}

template <class S>
const S* GptModelT<S>::stage_output(i64 slot_index) const {
  SB_CHECK(!shard_.head, "gpt: stage_output is for stages without the head");
  SB_CHECK(slot_index >= 0 && slot_index < shard_.activation_slots,
           "gpt: activation slot {} outside [0, {})", slot_index, shard_.activation_slots);
  const Slot& slot = slots_[static_cast<std::size_t>(slot_index)];
  SB_CHECK(slot.forwarded, "gpt: stage_output of slot {} before its forward", slot_index);
  return slot.acts.residual3 + (shard_.L - 1) * shard_.residual_rows(slot.B * slot.T) * shard_.C;
}

template <class S>
const S* GptModelT<S>::stage_input_gradient() const {
  SB_CHECK(!shard_.embedding, "gpt: stage_input_gradient is for stages without the embedding");
  SB_CHECK(input_gradient_ != nullptr, "gpt: stage_input_gradient before any backward_stage");
  return input_gradient_;
}

template <class S>
std::span<float> GptModelT<S>::tied_embedding_gradient() {
  SB_CHECK(shard_.embedding || shard_.head, "gpt: a middle stage holds no wte");
  return {grads_.wte, static_cast<std::size_t>(shard_.V_tp * shard_.C)};
}

template <class S>
std::vector<std::span<float>> GptModelT<S>::sequence_parallel_gradients() {
  if (!shard_.sequence_parallel || !k_.runs_kernels()) return {};
  const auto span = [](float* g, i64 n) { return std::span<float>(g, static_cast<std::size_t>(n)); };
  const i64 LC = shard_.L * shard_.C;
  std::vector<std::span<float>> spans{span(grads_.ln1w, LC), span(grads_.ln1b, LC), span(grads_.ln2w, LC),
                                      span(grads_.ln2b, LC)};
  if (shard_.head) {
    spans.push_back(span(grads_.lnfw, shard_.C));
    spans.push_back(span(grads_.lnfb, shard_.C));
  }
  return spans;
}

template <class S>
void GptModelT<S>::zero_grad() {
  if (!k_.runs_kernels()) return;  // a recording model holds no gradients
  zero_device_bytes(device_, grads_.wte, flat_size() * sizeof(float));
}

template <class S>
void GptModelT<S>::backward() { backward_stage(0, nullptr); }

template <class S>
void GptModelT<S>::backward_stage(i64 slot_index, const S* doutput) {
  backward_slot(slot_index, doutput, nullptr);
}

template <class S>
void GptModelT<S>::backward_slot(i64 slot_index, const S* doutput, const S* dhidden) {
  Slot& slot = slot_at(slot_index);
  const GptShard& s = shard_;
  SB_CHECK(slot.forwarded, "gpt backward of slot {} needs its forward first", slot_index);
  SB_CHECK(!s.head || slot.has_targets || dhidden, "gpt backward needs a forward with targets first");
  SB_CHECK(s.head || doutput != nullptr, "gpt backward: a stage without the head needs d(output)");
  const i64 B = slot.B, T = slot.T, BT = B * T, R = s.residual_rows(BT);
  const i64 L = s.L, C = s.C, NH = s.NH_tp, Ct = s.C_tp, F = s.F_tp, Vr = s.V_tp;
  const bool tp = s.tp_size > 1, sp = s.sequence_parallel;
  SB_CHECK(!sp || !dhidden, "gpt backward: backward_hidden runs the whole model, not a sequence-parallel shard");
  const ParameterTensorsT<S>& p = params_;
  const ParameterTensors& g = grads_;
  const ActivationTensorsT<S>& a = slot.acts;
  ActivationGradientsT<S>& d = acts_grads_;
  const bool runs = k_.runs_kernels();
  point_views(d, runs ? acts_grads_memory_.as<std::byte>() : recording_placeholder_.data(), s, B, T, runs);
  point_recompute_scratch(B, T);
  using Gradients = ActivationGradientsT<S>;
  // the head's gradients and d(output) (dlosses .. dresidual_out), one block's scratch (dln1 ..)
  const i64 head_bytes = layout_bytes(s, B, T, &Gradients::dlosses, &Gradients::dresidual_in);
  const i64 block_scratch_bytes = layout_bytes(s, B, T, &Gradients::dln1);
  const float* grads_base = grads_.wte;  // gradients_flat(), wherever it lives
  const auto ready = [&](const float* grad, i64 count) {
    if (gradient_ready_ && count > 0) gradient_ready_(grad - grads_base, count);
  };
  // Sequence parallel: rows of every tp rank gathered, into the activation scratch (a LayerNorm
  // output the linear's weight gradient reads) or the gradient one (an output gradient); and
  // the zeroed rows a column-parallel linear's partial input gradient accumulates into.
  S* gathered = recomputed_.gathered;  // (B, T, C)
  const auto activation_rows = [&](const S* mine) { return tp_all_gather_rows(gathered, mine, BT); };
  const auto gradient_rows = [&](const S* mine) { return tp_all_gather_rows(d.dall_rows, mine, BT); };
  const auto partial_input_gradient = [&](S* dinp) {
    if (!sp) return dinp;
    k_.zero(d.dall_rows, BT * C * static_cast<i64>(sizeof(S)));
    return d.dall_rows;
  };

  k_.begin_unit(s.head ? "head" : "boundary");
  std::optional<HeldUnit> head_weights;
  if (s.head)
    head_weights.emplace(*this, Unit::head, 0,
                         L > 0 ? std::optional<std::pair<Unit, i64>>{{Unit::block, L - 1}} : std::nullopt);
  k_.zero(d.dlosses, head_bytes);
  if (s.head && dhidden) {  // the caller's head on the hidden states: d(lnf) given
    if (runs) copy_device_bytes(d.dlnf, device_, dhidden, device_, static_cast<std::size_t>(BT * C) * sizeof(S));
    k_.layernorm_backward(d.dresidual_out, g.lnfw, g.lnfb, d.dlnf,
                           a.residual3 + (L - 1) * R * C, head_weights->w(p.lnfw), a.lnf_mean, a.lnf_rstd, R, C);
    ready(g.lnfw, C);
    ready(g.lnfb, C);
  } else if (s.head) {  // the head: mean loss -> logits -> final LayerNorm
    host_staging_.assign(static_cast<std::size_t>(BT), static_cast<float>(loss_scale_ / static_cast<double>(BT)));
    if (runs) copy_device_bytes(d.dlosses, device_, host_staging_.data(), Device::cpu, static_cast<std::size_t>(BT) * sizeof(float));
    if (!tp) {
      k_.crossentropy_backward(d.dlogits, a.probs, slot.targets, d.dlosses, BT, Vr);
    } else {
      k_.crossentropy_shard_backward(d.dlogits, a.probs, slot.targets, d.dlosses, s.vocab_begin,
                                      BT, Vr);
    }
    S* dlnf = partial_input_gradient(d.dlnf);
    k_.matmul_backward(dlnf, g.wte, nullptr, d.dlogits, activation_rows(a.lnf), head_weights->w(p.wte), BT, C, Vr);
    sum_partial_rows(d.dlnf, dlnf, BT);  // the head is column-parallel over the vocabulary
    k_.layernorm_backward(d.dresidual_out, g.lnfw, g.lnfb, d.dlnf,
                           a.residual3 + (L - 1) * R * C, head_weights->w(p.lnfw), a.lnf_mean, a.lnf_rstd, R, C);
    ready(g.lnfw, C);
    ready(g.lnfb, C);
    if (!s.embedding) ready(g.wte, Vr * C);  // the head's copy of the tied weight is final
  } else {
    if (runs) copy_device_bytes(d.dresidual_out, device_, doutput, device_, static_cast<std::size_t>(R * C) * sizeof(S));
  }

  head_weights.reset();
  // the blocks, last to first; dout is the gradient of block l's output, din of its input
  S* dout = d.dresidual_out;
  S* din = d.dresidual_in;
  for (i64 l = L - 1; l >= 0; --l) {
    k_.begin_unit("block");
    const HeldUnit weights(*this, Unit::block, l,
                           l > 0 ? std::optional<std::pair<Unit, i64>>{{Unit::block, l - 1}} : std::nullopt);
    k_.zero(din, R * C * static_cast<i64>(sizeof(S)));
    k_.zero(d.dln1, block_scratch_bytes);
    const S* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * R * C;  // (R, C)
    const S* ln1w = weights.w(p.ln1w + l * C);
    const S* qkvw = weights.w(p.qkvw + l * 3 * Ct * C);
    const S* attprojw = weights.w(p.attprojw + l * C * Ct);
    const S* ln2w = weights.w(p.ln2w + l * C);
    const S* fcw = weights.w(p.fcw + l * F * C);
    const S* fcprojw = weights.w(p.fcprojw + l * C * F);
    float* dln1w = g.ln1w + l * C;
    float* dln1b = g.ln1b + l * C;
    float* dqkvw = g.qkvw + l * 3 * Ct * C;
    float* dqkvb = g.qkvb + l * 3 * Ct;
    float* dattprojw = g.attprojw + l * C * Ct;
    float* dattprojb = g.attprojb + l * C;
    float* dln2w = g.ln2w + l * C;
    float* dln2b = g.ln2b + l * C;
    float* dfcw = g.fcw + l * F * C;
    float* dfcb = g.fcb + l * F;
    float* dfcprojw = g.fcprojw + l * C * F;
    float* dfcprojb = g.fcprojb + l * C;
    const BlockActivations b = block_activations(slot, l);
    // full: the block's forward again from its kept input, into the scratch (its output, kept,
    // is not rewritten)
    if (drops_block_internals(s.recompute)) forward_block(l, b, residual, nullptr, B, T, weights);

    // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))). The output gradient is
    // replicated over the tp group (gathered from the ranks' rows under sequence parallelism),
    // so every rank gets the whole (replicated) bias gradient; the input gradient of the
    // column-parallel fc is a partial sum (Megatron's f), all-reduced or reduce-scattered.
    k_.residual_backward(d.dresidual2, d.dfcproj, dout, R * C);
    k_.matmul_backward(d.dfch_gelu, dfcprojw, dfcprojb, gradient_rows(d.dfcproj), b.fch_gelu, fcprojw, BT, F, C);
    k_.gelu_backward(d.dfch, b.fch, d.dfch_gelu, BT * F);
    S* dln2 = partial_input_gradient(d.dln2);
    k_.matmul_backward(dln2, dfcw, dfcb, d.dfch, activation_rows(b.ln2), fcw, BT, C, F);
    sum_partial_rows(d.dln2, dln2, BT);
    k_.layernorm_backward(d.dresidual2, dln2w, dln2b, d.dln2, b.residual2, ln2w, b.ln2_mean,
                           b.ln2_rstd, R, C);
    // attention: residual2 = residual + attproj(attention(qkv(ln1(residual))))
    k_.residual_backward(din, d.dattproj, d.dresidual2, R * C);
    k_.matmul_backward(d.datty, dattprojw, dattprojb, gradient_rows(d.dattproj), b.atty, attprojw, BT, Ct, C);
    // selective: the probabilities again from the kept qkv, into the scratch; atty, read above
    // for the last time, is written again with the values it holds
    if (s.recompute == Recompute::selective) k_.attention_forward(b.atty, b.att, b.qkv, B, T, Ct, NH);
    k_.attention_backward(d.dqkv, d.datty, b.qkv, b.att, B, T, Ct, NH);
    S* dln1 = partial_input_gradient(d.dln1);
    k_.matmul_backward(dln1, dqkvw, dqkvb, d.dqkv, activation_rows(b.ln1), qkvw, BT, C, 3 * Ct);
    sum_partial_rows(d.dln1, dln1, BT);
    k_.layernorm_backward(din, dln1w, dln1b, d.dln1, residual, ln1w, b.ln1_mean, b.ln1_rstd, R, C);
    for (const auto& [grad, count] : {std::pair<const float*, i64>{dfcprojw, C * F}, {dfcprojb, C},
                                      {dfcw, F * C}, {dfcb, F}, {dln2w, C}, {dln2b, C},
                                      {dattprojw, C * Ct}, {dattprojb, C}, {dqkvw, 3 * Ct * C},
                                      {dqkvb, 3 * Ct}, {dln1w, C}, {dln1b, C}})
      ready(grad, count);
    std::swap(din, dout);
  }
  // dout: d(encoded), the gradient of this stage's input
  slot.forwarded = false;
  if (!s.embedding) {
    input_gradient_ = dout;
    return;
  }
  k_.begin_unit("embedding");
  if (!tp) {
    k_.embedding_backward(g.wte, g.wpe, dout, slot.tokens, B, T, C);
  } else {  // d(encoded) is replicated (gathered): each rank adds its vocabulary rows and the whole dwpe
    k_.embedding_shard_backward(g.wte, g.wpe, gradient_rows(dout), slot.tokens, s.vocab_begin, Vr, B, T, C);
  }
  ready(g.wte, Vr * C);
  ready(g.wpe, config_.max_seq_len * C);
}

template <class S>
std::vector<ParameterView> GptModelT<S>::parameter_views() {
  const auto specs = gpt_parameter_specs(config_);
  const auto shapes = gpt_shard_shapes(config_, shard_);
  const auto params = master_.members();
  const auto grads = grads_.members();
  std::vector<ParameterView> views;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const i64 numel = shapes[k].numel();
    if (numel == 0) continue;
    views.push_back({specs[k].name, *params[k], *grads[k], numel, specs[k].weight_decay});
  }
  return views;
}

template <class S>
std::vector<NamedValues> GptModelT<S>::forward_values(i64 slot_index) {
  const Slot& slot = slot_at(slot_index);
  std::vector<NamedValues> values;
  if (slot.B == 0) return values;
  const GptShard& s = shard_;
  const ActivationTensorsT<S>& a = slot.acts;
  const i64 BT = slot.B * slot.T, C = s.C, R = s.residual_rows(BT);
  // tensor (L, per_layer) or, with layer -1, one tensor of `per_layer` values; 16-bit ones skipped
  const auto add = [&](const char* name, const auto* data, i64 per_layer, i64 layer) {
    if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(data)>>, float>) {
      if (per_layer == 0) return;
      const float* begin = data + (layer < 0 ? 0 : layer * per_layer);
      values.push_back({layer < 0 ? std::string(name) : fmt::format("blocks.{}.{}", s.layer_begin + layer, name),
                        layer < 0 ? -1 : s.layer_begin + layer, {begin, static_cast<std::size_t>(per_layer)}});
    }
  };
  if (s.embedding) add("encoded", a.encoded, R * C, -1);
  // a tensor the recompute mode drops holds no layer in the slot
  const i64 kept = drops_block_internals(s.recompute) ? 0 : 1;
  const i64 kept_att = drops_attention_probabilities(s.recompute) ? 0 : 1;
  for (i64 l = 0; l < s.L; ++l) {
    add("ln1", a.ln1, kept * R * C, l);
    add("ln1_mean", a.ln1_mean, kept * R, l);
    add("ln1_rstd", a.ln1_rstd, kept * R, l);
    add("qkv", a.qkv, kept * BT * 3 * s.C_tp, l);
    add("att", a.att, kept_att * slot.B * s.NH_tp * slot.T * slot.T, l);
    add("atty", a.atty, kept * BT * s.C_tp, l);
    add("attproj", a.attproj, kept * R * C, l);
    add("residual2", a.residual2, kept * R * C, l);
    add("ln2", a.ln2, kept * R * C, l);
    add("ln2_mean", a.ln2_mean, kept * R, l);
    add("ln2_rstd", a.ln2_rstd, kept * R, l);
    add("fch", a.fch, kept * BT * s.F_tp, l);
    add("fch_gelu", a.fch_gelu, kept * BT * s.F_tp, l);
    add("fcproj", a.fcproj, kept * R * C, l);
    add("residual3", a.residual3, R * C, l);
  }
  if (s.head) {
    add("lnf", a.lnf, R * C, -1);
    add("lnf_mean", a.lnf_mean, R, -1);
    add("lnf_rstd", a.lnf_rstd, R, -1);
    add("logits", a.logits, BT * s.V_tp, -1);
    add("probs", a.probs, BT * s.V_tp, -1);
    if (slot.has_targets) add("losses", a.losses, BT, -1);
  }
  return values;
}

template <class S>
std::vector<NamedValues> GptModelT<S>::gradient_values() {
  const auto specs = gpt_parameter_specs(config_);
  const auto shapes = gpt_shard_shapes(config_, shard_);
  const auto grads = grads_.members();
  const auto tensor = [&](std::size_t k, i64 layer) -> NamedValues {
    const i64 numel = shapes[k].numel();
    if (layer < 0) return {specs[k].name, -1, {*grads[k], static_cast<std::size_t>(numel)}};
    const i64 per_layer = numel / shard_.L;
    return {fmt::format("blocks.{}.{}", shard_.layer_begin + layer, specs[k].name), shard_.layer_begin + layer,
            {*grads[k] + layer * per_layer, static_cast<std::size_t>(per_layer)}};
  };
  // storage order is forward order: wte wpe, the block tensors 2..13, lnfw lnfb
  std::vector<NamedValues> values;
  for (std::size_t k : {0, 1})
    if (shapes[k].numel() > 0) values.push_back(tensor(k, -1));
  for (i64 l = 0; l < shard_.L; ++l)
    for (std::size_t k = 2; k < 14; ++k) values.push_back(tensor(k, l));
  for (std::size_t k : {14, 15})
    if (shapes[k].numel() > 0) values.push_back(tensor(k, -1));
  return values;
}

template <class S>
std::vector<optim::ParameterSlice> GptModelT<S>::parameter_slices() {
  const auto specs = gpt_parameter_specs(config_);
  const auto shapes = gpt_shard_shapes(config_, shard_);
  const auto params = master_.members();
  const auto grads = grads_.members();
  std::vector<optim::ParameterSlice> slices;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const i64 numel = shapes[k].numel();
    if (numel == 0) continue;
    const int tensor = static_cast<int>(k);
    const bool tp_replica =
        shard_.tp_rank > 0 && gpt_tensor_split(tensor) == TensorSplit::replicated;
    const bool head_copy_of_wte = tensor == 0 && !shard_.embedding;
    slices.push_back({specs[k].name, *params[k], *grads[k], numel, specs[k].weight_decay,
                      tp_replica || head_copy_of_wte});
  }
  return slices;
}

#define SB_INSTANTIATE_GPT(S)                                                                          \
  template struct ParameterTensorsT<S>;                                                               \
  template class GptModelT<S>;                                                                        \
  template i64 gpt_activation_bytes<S>(const GptConfig&, i64, i64, Recompute);                        \
  template i64 gpt_activation_gradient_bytes<S>(const GptConfig&, i64, i64);                          \
  template GptActivationBytes gpt_shard_activation_bytes<S>(const GptShard&, i64, i64);               \
  template GptActivationBytes gpt_shard_recompute_scratch_bytes<S>(const GptShard&, i64, i64);        \
  template i64 gpt_shard_activation_gradient_bytes<S>(const GptShard&, i64, i64);
SB_INSTANTIATE_GPT(float)
SB_INSTANTIATE_GPT(bf16)
SB_INSTANTIATE_GPT(fp16)
#undef SB_INSTANTIATE_GPT

}  // namespace sb::gpt
