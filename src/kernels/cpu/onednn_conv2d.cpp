// SPDX-License-Identifier: Apache-2.0
// 2-D convolutions as oneDNN primitives, created once per shape, pass and data type and reused.
// oneDNN picks the layouts its kernels want (blocked, nChw16c-like); the model's NCHW operands
// are reordered into them and the results back, once per call. Results that are accumulated
// (dinp, dweight) are added in fp32 to the old value and rounded once to the destination's type:
// dinp from oneDNN's channel-blocked fp32 result (blocked_channels_add.hpp, or a reorder with a
// sum post-op in another layout), dweight by a reorder with a sum post-op. dbias is added from
// oneDNN's fp32 diff_bias. The weight gradient is summed as conv2d.cpp's is: the images cut into
// up to kWeightGradientGroups contiguous groups, each group's partial by its own primitive call,
// the partials added in image order. The groups run side by side, one a thread, each on a
// primitive created for one thread, so a partial does not depend on the thread count or on which
// thread ran it. oneDNN's own reduction over a batch rounds differently for each batch size,
// and resnet-mini's training amplifies that: 5 SGD steps at dp 2 (8 images a rank) drifted 5%
// from one rank's 16, with groups of 4 still 0.2%; with one image a group up to 16 images, 2e-6
// as the own kernels. The forward and dinp are the same bits for an image whatever the batch.
#include "kernels/cpu/onednn_conv2d.hpp"

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <omp.h>
#include <optional>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/check.hpp"
#include "kernels/cpu/blocked_channels_add.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/onednn_conv_shape.hpp"

namespace sb::kernels::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

enum class Pass { forward, forward_bias, backward_data, backward_weights, backward_weights_bias };

// The last field: whether the primitive was created for one thread (the weight gradient's
// groups, run side by side, one a thread).
using Key = std::tuple<Pass, dt, i64, i64, i64, i64, i64, i64, i64, i64, i64, bool>;

Key key_of(Pass pass, dt type, const ConvShape& s, bool one_thread) {
  return {pass, type, s.N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad, one_thread};
}

memory::desc any(const memory::dims& dims, dt type) { return memory::desc(dims, type, tag::any); }

// One cached primitive with the layouts it chose for its arguments.
struct Conv {
  dnnl::primitive primitive;
  std::unordered_map<int, memory::desc> descs;  // DNNL_ARG_* -> layout
  memory::desc scratchpad;
  std::string implementation;
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The forward primitive descriptor (also the hint of the backward ones).
dnnl::convolution_forward::primitive_desc forward_pd(const ConvShape& s, dt type, bool bias,
                                                     const dnnl::engine& engine) {
  using dnnl::convolution_forward;
  const memory::desc src = any(s.src(), type), wei = any(s.weights(), type), dst = any(s.dst(), type);
  const auto desc =
      bias ? convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                       wei, memory::desc({s.OC}, type, tag::x), dst, s.strides(), s.padding_l(),
                                       s.padding_r())
           : convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                       wei, dst, s.strides(), s.padding_l(), s.padding_r());
  return convolution_forward::primitive_desc(desc, user_scratchpad(), engine);
}

Conv make_conv(Pass pass, dt type, const ConvShape& s, const dnnl::engine& engine) {
  Conv conv;
  const auto finish = [&conv](const auto& pd, std::initializer_list<int> args) {
    for (int arg : args) conv.descs[arg] = pd.query_md(dnnl::query::exec_arg_md, arg);
    conv.scratchpad = pd.scratchpad_desc();
    conv.implementation = pd.impl_info_str();
  };
  if (pass == Pass::forward || pass == Pass::forward_bias) {
    const bool bias = pass == Pass::forward_bias;
    const auto pd = forward_pd(s, type, bias, engine);
    conv.primitive = dnnl::convolution_forward(pd);
    if (bias)
      finish(pd, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST});
    else
      finish(pd, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST});
    return conv;
  }
  const auto hint = forward_pd(s, type, false, engine);
  if (pass == Pass::backward_data) {
    using dnnl::convolution_backward_data;
    const convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any(s.src(), dt::f32),
                                               any(s.weights(), type), any(s.dst(), type), s.strides(),
                                               s.padding_l(), s.padding_r());
    const convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), engine, hint);
    conv.primitive = convolution_backward_data(pd);
    finish(pd, {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC});
    return conv;
  }
  using dnnl::convolution_backward_weights;
  const bool bias = pass == Pass::backward_weights_bias;
  const memory::desc src = any(s.src(), type), dwei = any(s.weights(), dt::f32), ddst = any(s.dst(), type);
  const auto desc = bias ? convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, dwei,
                                                              memory::desc({s.OC}, dt::f32, tag::x), ddst,
                                                              s.strides(), s.padding_l(), s.padding_r())
                         : convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, dwei, ddst,
                                                              s.strides(), s.padding_l(), s.padding_r());
  const convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), engine, hint);
  conv.primitive = convolution_backward_weights(pd);
  if (bias)
    finish(pd, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS});
  else
    finish(pd, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS});
  return conv;
}

void* writable(const void* p) { return const_cast<void*>(p); }

template <class T>
constexpr dt type_of() {
  return std::is_same_v<T, float> ? dt::f32 : dt::bf16;
}

}  // namespace

// Groups of the weight gradient's images, as conv2d.cpp's kMinWeightPartials: up to 16 images
// one each, so a batch split over data-parallel ranks sums the same per-image partials.
constexpr i64 kWeightGradientGroups = 16;

struct OnednnConv2d::Primitives {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Conv> convs;
  std::string last_implementation = "none";
  std::vector<float> weight_sums, bias_sums;  // the weight gradient's groups, summed (plain, fp32)

  // The primitive for `s`, created on first use. one_thread: sized for one thread (oneDNN's
  // OpenMP build sizes a primitive's work split by omp_get_max_threads() when it is created,
  // and runs it on the calling thread alone inside a parallel region).
  const Conv& conv(Pass pass, dt type, const ConvShape& s, bool one_thread = false) {
    const Key key = key_of(pass, type, s, one_thread);
    auto found = convs.find(key);
    if (found == convs.end()) {
      const int threads = omp_get_max_threads();
      if (one_thread) omp_set_num_threads(1);
      Conv made = make_conv(pass, type, s, engine);
      if (one_thread) omp_set_num_threads(threads);
      found = convs.emplace(key, std::move(made)).first;
    }
    last_implementation = found->second.implementation;
    return found->second;
  }
};

namespace {

float* take_bytes(WideningScratch& scratch, std::size_t bytes) {
  return scratch.take(static_cast<i64>((bytes + sizeof(float) - 1) / sizeof(float)));
}

void reorder(dnnl::stream& stream, const memory& from, const memory& to, bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl::reorder::primitive_desc pd(from, to, attr);
  dnnl::reorder(pd).execute(stream, const_cast<memory&>(from), const_cast<memory&>(to));
}

// One call of a cached primitive on the model's plain buffers: inputs reordered into the
// layouts it chose where they differ, outputs written in place where the layouts agree and
// nothing is accumulated, otherwise into scratch and reordered (summed) into place.
class Call {
 public:
  Call(const Conv& conv, const dnnl::engine& engine, dnnl::stream& stream, WideningScratch& scratch)
      : conv_(conv), engine_(engine), stream_(stream), scratch_(scratch) {}

  void input(int arg, const void* data, const memory::desc& plain) {
    const memory user(plain, engine_, writable(data));
    const memory::desc& want = conv_.descs.at(arg);
    if (want == plain) {
      args_.emplace(arg, user);
      return;
    }
    const memory inside(want, engine_, take_bytes(scratch_, want.get_size()));
    reorder(stream_, user, inside, false);
    args_.emplace(arg, inside);
  }

  // An input already in the layout the primitive wants.
  void laid_out(int arg, const memory& data) { args_.emplace(arg, data); }

  void output(int arg, void* data, const memory::desc& plain, bool accumulate) {
    const memory user(plain, engine_, data);
    const memory::desc& want = conv_.descs.at(arg);
    if (want == plain && !accumulate) {
      args_.emplace(arg, user);
      return;
    }
    const memory inside(want, engine_, take_bytes(scratch_, want.get_size()));
    args_.emplace(arg, inside);
    after_.push_back({inside, user, accumulate});
  }

  // An fp32 result into scratch as it lies (the caller adds it in).
  const float* result(int arg) {
    const memory::desc& want = conv_.descs.at(arg);
    float* data = take_bytes(scratch_, want.get_size());
    args_.emplace(arg, memory(want, engine_, data));
    return data;
  }

  void run() {
    if (conv_.scratchpad.get_size() > 0)
      args_.emplace(DNNL_ARG_SCRATCHPAD,
                    memory(conv_.scratchpad, engine_, take_bytes(scratch_, conv_.scratchpad.get_size())));
    conv_.primitive.execute(stream_, args_);
    for (const Pending& p : after_) reorder(stream_, p.inside, p.user, p.accumulate);
    stream_.wait();
  }

 private:
  struct Pending {
    memory inside, user;
    bool accumulate;
  };
  const Conv& conv_;
  const dnnl::engine& engine_;
  dnnl::stream& stream_;
  WideningScratch& scratch_;
  std::unordered_map<int, memory> args_;
  std::vector<Pending> after_;
};

template <class T>
void run_forward(OnednnConv2d::Primitives& p, WideningScratch& scratch, T* out, const T* inp, const T* weight,
                 const T* bias, const ConvShape& s) {
  constexpr dt type = type_of<T>();
  const Conv& conv = p.conv(bias ? Pass::forward_bias : Pass::forward, type, s);
  Call call(conv, p.engine, p.stream, scratch);
  call.input(DNNL_ARG_SRC, inp, memory::desc(s.src(), type, tag::nchw));
  call.input(DNNL_ARG_WEIGHTS, weight, memory::desc(s.weights(), type, tag::oihw));
  if (bias) call.input(DNNL_ARG_BIAS, bias, memory::desc({s.OC}, type, tag::x));
  call.output(DNNL_ARG_DST, out, memory::desc(s.dst(), type, tag::nchw), false);
  call.run();
  scratch.release_all();
}

// The weight gradient group by group, each group's images reordered on their own: where the
// groups' primitives chose layouts that are not one batch's slices.
template <class T>
void weight_gradient_by_group(OnednnConv2d::Primitives& p, WideningScratch& scratch, float* dweight, float* dbias,
                              const T* dout, const T* inp, const ConvShape& s, Pass pass, i64 groups) {
  constexpr dt type = type_of<T>();
  const i64 weights = s.OC * s.C * s.KH * s.KW, image_in = s.C * s.H * s.W, image_out = s.OC * s.OH() * s.OW();
  std::vector<float>& weight_sums = p.weight_sums;
  std::vector<float>& bias_sums = p.bias_sums;
  weight_sums.resize(static_cast<std::size_t>(weights));
  bias_sums.assign(static_cast<std::size_t>(s.OC), 0.0f);
  for (i64 g = 0; g < groups; ++g) {
    const i64 n0 = g * s.N / groups;
    ConvShape group = s;
    group.N = (g + 1) * s.N / groups - n0;
    Call call(p.conv(pass, type, group), p.engine, p.stream, scratch);
    call.input(DNNL_ARG_SRC, inp + n0 * image_in, memory::desc(group.src(), type, tag::nchw));
    call.input(DNNL_ARG_DIFF_DST, dout + n0 * image_out, memory::desc(group.dst(), type, tag::nchw));
    call.output(DNNL_ARG_DIFF_WEIGHTS, weight_sums.data(), memory::desc(group.weights(), dt::f32, tag::oihw), n0 > 0);
    const float* group_bias = dbias ? call.result(DNNL_ARG_DIFF_BIAS) : nullptr;
    call.run();
    if (dbias)
      for (i64 o = 0; o < s.OC; ++o) bias_sums[o] += group_bias[o];
    scratch.release_all();
  }
  for (i64 i = 0; i < weights; ++i) dweight[i] += weight_sums[i];
  if (dbias)
    for (i64 o = 0; o < s.OC; ++o) dbias[o] += bias_sums[o];
}

// `desc` with n images where its layout keeps images apart (the batch outermost and not blocked),
// so that a group of images is a slice of a batch's buffer; nullopt otherwise.
std::optional<memory::desc> with_batch(const memory::desc& desc, i64 n) {
  dnnl_memory_desc_t d = desc.data;
  if (d.format_kind != dnnl_blocked || d.extra.flags != 0 || d.offset0 != 0) return std::nullopt;
  const auto& blocking = d.format_desc.blocking;
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == 0) return std::nullopt;
  for (int i = 1; i < d.ndims; ++i)
    if (blocking.strides[i] > blocking.strides[0]) return std::nullopt;
  d.dims[0] = n;
  d.padded_dims[0] = n;
  return memory::desc(d);
}

// dinp += the data gradient (oneDNN's fp32 result added in by add_blocked_channels where it is
// channel-blocked by 16, else by a reorder with a sum). dout_laid_out: dout already reordered
// by the weight gradient, used where the primitive wants that layout. The caller releases scratch.
template <class T>
void data_gradient(OnednnConv2d::Primitives& p, WideningScratch& scratch, T* dinp, const T* dout, const T* weight,
                   const ConvShape& s, const memory* dout_laid_out) {
  constexpr dt type = type_of<T>();
  const Conv& conv = p.conv(Pass::backward_data, type, s);
  Call call(conv, p.engine, p.stream, scratch);
  if (dout_laid_out && conv.descs.at(DNNL_ARG_DIFF_DST) == dout_laid_out->get_desc())
    call.laid_out(DNNL_ARG_DIFF_DST, *dout_laid_out);
  else
    call.input(DNNL_ARG_DIFF_DST, dout, memory::desc(s.dst(), type, tag::nchw));
  call.input(DNNL_ARG_WEIGHTS, weight, memory::desc(s.weights(), type, tag::oihw));
  if (conv.descs.at(DNNL_ARG_DIFF_SRC) != memory::desc(s.src(), dt::f32, tag::nChw16c)) {
    call.output(DNNL_ARG_DIFF_SRC, dinp, memory::desc(s.src(), type, tag::nchw), true);
    call.run();
    return;
  }
  const float* gradient = call.result(DNNL_ARG_DIFF_SRC);  // fp32, 16 channels a block
  call.run();
  add_blocked_channels(dinp, gradient, s.N, s.C, s.H * s.W);
}

// The weight gradient's groups as one-thread primitives whose layouts are slices of one
// batch's; nullopt where a group's primitive chose another layout.
struct GroupedWeightGradient {
  std::vector<const Conv*> convs;
  memory::desc src, ddst, partial;  // the whole batch's, and one group's dweight
  std::size_t scratchpad_bytes = 0;
};

std::optional<GroupedWeightGradient> grouped_weight_gradient(OnednnConv2d::Primitives& p, Pass pass, dt type,
                                                             const ConvShape& s, i64 groups) {
  GroupedWeightGradient plan;
  for (i64 g = 0; g < groups; ++g) {
    ConvShape group = s;
    group.N = (g + 1) * s.N / groups - g * s.N / groups;
    const Conv& conv = p.conv(pass, type, group, true);
    if (g == 0) {
      const std::optional<memory::desc> src = with_batch(conv.descs.at(DNNL_ARG_SRC), s.N);
      const std::optional<memory::desc> ddst = with_batch(conv.descs.at(DNNL_ARG_DIFF_DST), s.N);
      if (!src || !ddst) return std::nullopt;
      plan.src = *src;
      plan.ddst = *ddst;
      plan.partial = conv.descs.at(DNNL_ARG_DIFF_WEIGHTS);
    }
    if (conv.descs.at(DNNL_ARG_SRC) != *with_batch(plan.src, group.N) ||
        conv.descs.at(DNNL_ARG_DIFF_DST) != *with_batch(plan.ddst, group.N) ||
        conv.descs.at(DNNL_ARG_DIFF_WEIGHTS) != plan.partial)
      return std::nullopt;
    plan.convs.push_back(&conv);
    plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, conv.scratchpad.get_size());
  }
  return plan;
}

// `plain` in `laid_out`: the user's buffer where they agree, otherwise reordered into scratch.
memory laid_out_copy(OnednnConv2d::Primitives& p, WideningScratch& scratch, const memory::desc& plain,
                     const memory::desc& laid_out, const void* data) {
  const memory user(plain, p.engine, writable(data));
  if (laid_out == plain) return user;
  const memory copy(laid_out, p.engine, take_bytes(scratch, laid_out.get_size()));
  reorder(p.stream, user, copy, false);
  return copy;
}

constexpr std::size_t round_up_to_line(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

void weight_gradient_of_groups(OnednnConv2d::Primitives& p, WideningScratch& scratch,
                               const GroupedWeightGradient& grouped, const memory& whole_src,
                               const memory& whole_ddst, float* dweight, float* dbias, const ConvShape& s, i64 groups);

template <class T>
void run_backward(OnednnConv2d::Primitives& p, WideningScratch& scratch, T* dinp, float* dweight, float* dbias,
                  const T* dout, const T* inp, const T* weight, const ConvShape& s) {
  constexpr dt type = type_of<T>();
  const Pass pass = dbias ? Pass::backward_weights_bias : Pass::backward_weights;
  const i64 groups = std::min(s.N, kWeightGradientGroups);
  const std::optional<GroupedWeightGradient> plan = grouped_weight_gradient(p, pass, type, s, groups);
  if (!plan) {
    if (dinp) data_gradient(p, scratch, dinp, dout, weight, s, nullptr);
    scratch.release_all();
    weight_gradient_by_group(p, scratch, dweight, dbias, dout, inp, s, pass, groups);
    return;
  }
  // The batch reordered once into the groups' layout, each group a slice of it (the data
  // gradient reads the same dout copy where it wants that layout). The groups run side by side,
  // one a thread, each a one-thread primitive into its own partial; the partials are then added
  // in group order, so the sum does not depend on which thread ran a group, and added into
  // dweight by one reorder.
  const memory whole_src = laid_out_copy(p, scratch, memory::desc(s.src(), type, tag::nchw), plan->src, inp);
  const memory whole_ddst = laid_out_copy(p, scratch, memory::desc(s.dst(), type, tag::nchw), plan->ddst, dout);
  if (dinp) data_gradient(p, scratch, dinp, dout, weight, s, &whole_ddst);
  weight_gradient_of_groups(p, scratch, *plan, whole_src, whole_ddst, dweight, dbias, s, groups);
}

// The groups of `plan` side by side over the laid-out batch: dweight += (dbias +=) their sum.
void weight_gradient_of_groups(OnednnConv2d::Primitives& p, WideningScratch& scratch,
                               const GroupedWeightGradient& grouped, const memory& whole_src,
                               const memory& whole_ddst, float* dweight, float* dbias, const ConvShape& s, i64 groups) {
  const GroupedWeightGradient* plan = &grouped;
  const std::size_t partial_bytes = round_up_to_line(plan->partial.get_size());
  const std::size_t scratchpad_bytes = round_up_to_line(plan->scratchpad_bytes);
  const auto threads = static_cast<std::size_t>(HostSpace().concurrency());
  char* partials = reinterpret_cast<char*>(take_bytes(scratch, static_cast<std::size_t>(groups) * partial_bytes));
  float* bias_partials = dbias ? scratch.take(groups * s.OC) : nullptr;
  char* scratchpads = scratchpad_bytes > 0 ? reinterpret_cast<char*>(take_bytes(scratch, threads * scratchpad_bytes))
                                           : nullptr;
  const std::size_t src_image = plan->src.get_size() / static_cast<std::size_t>(s.N);
  const std::size_t ddst_image = plan->ddst.get_size() / static_cast<std::size_t>(s.N);
  std::vector<std::string> errors(static_cast<std::size_t>(groups));
  parallel_for_each_dynamic("sb::onednn_conv2d_weight_gradient_groups", groups, [&](i64 g) {
    try {
      const Conv& conv = *plan->convs[static_cast<std::size_t>(g)];
      const auto n0 = static_cast<std::size_t>(g * s.N / groups);
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      SB_CHECK(thread < threads, "conv2d_backward: thread {} of a pool of {}", thread, threads);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, memory(conv.descs.at(DNNL_ARG_SRC), p.engine,
                                static_cast<char*>(whole_src.get_data_handle()) + n0 * src_image)},
          {DNNL_ARG_DIFF_DST, memory(conv.descs.at(DNNL_ARG_DIFF_DST), p.engine,
                                     static_cast<char*>(whole_ddst.get_data_handle()) + n0 * ddst_image)},
          {DNNL_ARG_DIFF_WEIGHTS,
           memory(plan->partial, p.engine, partials + static_cast<std::size_t>(g) * partial_bytes)}};
      if (dbias)
        args.emplace(DNNL_ARG_DIFF_BIAS, memory(conv.descs.at(DNNL_ARG_DIFF_BIAS), p.engine, bias_partials + g * s.OC));
      if (scratchpads)
        args.emplace(DNNL_ARG_SCRATCHPAD, memory(conv.scratchpad, p.engine, scratchpads + thread * scratchpad_bytes));
      dnnl::stream stream(p.engine);
      conv.primitive.execute(stream, args);
      stream.wait();
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(g)] = e.what();
    }
  });
  for (i64 g = 0; g < groups; ++g)
    SB_CHECK(errors[g].empty(), "conv2d_backward: weight gradient group {} of {}: {}", g, groups, errors[g]);
  auto* sum = reinterpret_cast<float*>(partials);
  const i64 partial_floats = static_cast<i64>(plan->partial.get_size() / sizeof(float));
  for (i64 g = 1; g < groups; ++g) {
    const auto* part = reinterpret_cast<const float*>(partials + static_cast<std::size_t>(g) * partial_bytes);
    for (i64 i = 0; i < partial_floats; ++i) sum[i] += part[i];
  }
  const memory user_dweight(memory::desc(s.weights(), dt::f32, tag::oihw), p.engine, dweight);
  reorder(p.stream, memory(plan->partial, p.engine, sum), user_dweight, true);
  p.stream.wait();
  if (dbias)
    for (i64 o = 0; o < s.OC; ++o) {  // each channel's groups in order, then into dbias
      float channel = 0;
      for (i64 g = 0; g < groups; ++g) channel += bias_partials[g * s.OC + o];
      dbias[o] += channel;
    }
  scratch.release_all();
}

// fp16 operands on fp32 primitives: the activations laid out and widened, and the results
// narrowed, by one pass each (blocked_channels_add.hpp), the weights and bias widened into
// scratch. false (nothing written) where a primitive wants a layout other than 16-channel
// blocks.
memory::desc blocked(const memory::dims& dims) { return memory::desc(dims, dt::f32, tag::nChw16c); }

float* widened_copy(WideningScratch& scratch, const fp16* values, i64 n) {
  float* out = scratch.take(n);
  widen_fp16(out, values, n);
  return out;
}

memory blocked_copy(OnednnConv2d::Primitives& p, WideningScratch& scratch, const fp16* values,
                    const memory::dims& dims) {
  const memory::desc desc = blocked(dims);
  float* data = take_bytes(scratch, desc.get_size());
  to_blocked_channels(data, values, dims[0], dims[1], dims[2] * dims[3]);
  return memory(desc, p.engine, data);
}

bool run_forward_fp16(OnednnConv2d::Primitives& p, WideningScratch& scratch, fp16* out, const fp16* inp,
                      const fp16* weight, const fp16* bias, const ConvShape& s) {
  const Conv& conv = p.conv(bias ? Pass::forward_bias : Pass::forward, dt::f32, s);
  if (conv.descs.at(DNNL_ARG_SRC) != blocked(s.src()) || conv.descs.at(DNNL_ARG_DST) != blocked(s.dst())) return false;
  Call call(conv, p.engine, p.stream, scratch);
  call.laid_out(DNNL_ARG_SRC, blocked_copy(p, scratch, inp, s.src()));
  call.input(DNNL_ARG_WEIGHTS, widened_copy(scratch, weight, s.OC * s.C * s.KH * s.KW),
             memory::desc(s.weights(), dt::f32, tag::oihw));
  if (bias) call.input(DNNL_ARG_BIAS, widened_copy(scratch, bias, s.OC), memory::desc({s.OC}, dt::f32, tag::x));
  const float* result = call.result(DNNL_ARG_DST);
  call.run();
  from_blocked_channels(out, result, s.N, s.OC, s.OH() * s.OW());
  scratch.release_all();
  return true;
}

bool run_backward_fp16(OnednnConv2d::Primitives& p, WideningScratch& scratch, fp16* dinp, float* dweight,
                       float* dbias, const fp16* dout, const fp16* inp, const fp16* weight, const ConvShape& s) {
  const Pass pass = dbias ? Pass::backward_weights_bias : Pass::backward_weights;
  const i64 groups = std::min(s.N, kWeightGradientGroups);
  const std::optional<GroupedWeightGradient> plan = grouped_weight_gradient(p, pass, dt::f32, s, groups);
  if (!plan || plan->src != blocked(s.src()) || plan->ddst != blocked(s.dst())) return false;
  const Conv* data = dinp ? &p.conv(Pass::backward_data, dt::f32, s) : nullptr;
  if (data && (data->descs.at(DNNL_ARG_DIFF_DST) != blocked(s.dst()) ||
               data->descs.at(DNNL_ARG_DIFF_SRC) != blocked(s.src())))
    return false;
  const memory whole_src = blocked_copy(p, scratch, inp, s.src());
  const memory whole_ddst = blocked_copy(p, scratch, dout, s.dst());
  if (data) {
    Call call(*data, p.engine, p.stream, scratch);
    call.laid_out(DNNL_ARG_DIFF_DST, whole_ddst);
    call.input(DNNL_ARG_WEIGHTS, widened_copy(scratch, weight, s.OC * s.C * s.KH * s.KW),
               memory::desc(s.weights(), dt::f32, tag::oihw));
    const float* gradient = call.result(DNNL_ARG_DIFF_SRC);
    call.run();
    add_blocked_channels(dinp, gradient, s.N, s.C, s.H * s.W);
  }
  weight_gradient_of_groups(p, scratch, *plan, whole_src, whole_ddst, dweight, dbias, s, groups);
  return true;
}

}  // namespace

OnednnConv2d::OnednnConv2d(WideningScratch& scratch) : primitives_(std::make_unique<Primitives>()), scratch_(&scratch) {}

OnednnConv2d::~OnednnConv2d() = default;

const std::string& OnednnConv2d::last_implementation() const { return primitives_->last_implementation; }

void OnednnConv2d::forward(float* out, const float* inp, const float* weight, const float* bias, i64 N, i64 C, i64 H,
                           i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  run_forward(*primitives_, *scratch_, out, inp, weight, bias,
              checked_shape("conv2d_forward", N, C, H, W, OC, KH, KW, stride, pad));
}

void OnednnConv2d::backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride,
                            i64 pad) {
  run_backward(*primitives_, *scratch_, dinp, dweight, dbias, dout, inp, weight,
               checked_shape("conv2d_backward", N, C, H, W, OC, KH, KW, stride, pad));
}

void OnednnConv2d::forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, i64 N, i64 C, i64 H,
                           i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  run_forward(*primitives_, *scratch_, out, inp, weight, bias,
              checked_shape("bf16 conv2d_forward", N, C, H, W, OC, KH, KW, stride, pad));
}

void OnednnConv2d::backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                            const bf16* weight, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride,
                            i64 pad) {
  run_backward(*primitives_, *scratch_, dinp, dweight, dbias, dout, inp, weight,
               checked_shape("bf16 conv2d_backward", N, C, H, W, OC, KH, KW, stride, pad));
}

bool OnednnConv2d::forward(fp16* out, const fp16* inp, const fp16* weight, const fp16* bias, i64 N, i64 C, i64 H,
                           i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  return run_forward_fp16(*primitives_, *scratch_, out, inp, weight, bias,
                          checked_shape("fp16 conv2d_forward", N, C, H, W, OC, KH, KW, stride, pad));
}

bool OnednnConv2d::backward(fp16* dinp, float* dweight, float* dbias, const fp16* dout, const fp16* inp,
                            const fp16* weight, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride,
                            i64 pad) {
  return run_backward_fp16(*primitives_, *scratch_, dinp, dweight, dbias, dout, inp, weight,
                           checked_shape("fp16 conv2d_backward", N, C, H, W, OC, KH, KW, stride, pad));
}

}  // namespace sb::kernels::cpu
