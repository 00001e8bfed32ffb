// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/onednn_int8_conv2d.hpp"

#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>

#include "core/check.hpp"
#include "core/cpu_isa.hpp"
#include "kernels/cpu/onednn_conv_shape.hpp"

namespace sb::kernels::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

using ShapeKey = std::tuple<i64, i64, i64, i64, i64, i64, i64, i64, i64>;

ShapeKey key_of(const ConvShape& s) { return {s.N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad}; }

// A 64-bit FNV-1a digest of the weight bytes, eight at a time: a tensor whose values changed
// (or a new tensor at a freed one's address) is reordered again.
std::uint64_t digest(const std::int8_t* bytes, i64 n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  i64 i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
  }
  for (; i < n; ++i) h = (h ^ static_cast<std::uint8_t>(bytes[i])) * 0x100000001b3ull;
  return h ^ static_cast<std::uint64_t>(n);
}

struct Conv {
  dnnl::convolution_forward primitive;
  memory::desc src, weights, dst;
};

// src (N,C,H,W) s8 as nhwc, weights in the layout oneDNN picks, dst s32 as nhwc; nullopt where
// oneDNN's choice is not a VNNI or AMX kernel.
std::optional<Conv> make_conv(const ConvShape& s, const dnnl::engine& engine) {
  Conv conv;
  conv.src = memory::desc(s.src(), dt::s8, tag::nhwc);
  conv.dst = memory::desc(s.dst(), dt::s32, tag::nhwc);
  const memory::desc any_weights(s.weights(), dt::s8, tag::any);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             conv.src, any_weights, conv.dst, s.strides(), s.padding_l(), s.padding_r());
  const dnnl::convolution_forward::primitive_desc pd(desc, engine);
  const std::string_view impl = pd.impl_info_str();
  if (impl.find("vnni") == std::string_view::npos && impl.find("amx") == std::string_view::npos) return std::nullopt;
  conv.weights = pd.weights_desc();
  conv.primitive = dnnl::convolution_forward(pd);
  return conv;
}

// One weight tensor reordered for one shape's primitive.
struct PreparedWeights {
  std::uint64_t digest = 0;
  memory values;
};

void* writable(const void* p) { return const_cast<void*>(p); }

// At most this many reordered weight tensors are kept (a model's layers times its batch shapes).
constexpr std::size_t kMaxPreparedWeights = 1024;

// The process's primitives (one per shape; nullopt: oneDNN offers no exact kernel for it) and
// reordered weights (per weight address and shape).
class Int8Convolutions {
 public:
  bool run(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, const ConvShape& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    const ShapeKey key = key_of(s);
    auto found = convs_.find(key);
    if (found == convs_.end()) found = convs_.emplace(key, make_conv(s, engine_)).first;
    if (!found->second) return false;
    const Conv& conv = *found->second;
    conv.primitive.execute(stream_, {{DNNL_ARG_SRC, memory(conv.src, engine_, writable(inp))},
                                     {DNNL_ARG_WEIGHTS, prepared(conv, weight, s)},
                                     {DNNL_ARG_DST, memory(conv.dst, engine_, acc)}});
    stream_.wait();
    return true;
  }

 private:
  const memory& prepared(const Conv& conv, const std::int8_t* weight, const ConvShape& s) {
    const std::uint64_t d = digest(weight, s.OC * s.C * s.KH * s.KW);
    const auto key = std::make_pair(weight, key_of(s));
    auto found = weights_.find(key);
    if (found != weights_.end() && found->second.digest == d) return found->second.values;
    if (found == weights_.end()) {
      if (weights_.size() >= kMaxPreparedWeights) weights_.clear();
      found = weights_.emplace(key, PreparedWeights{}).first;
    }
    PreparedWeights& p = found->second;
    p.digest = d;
    p.values = memory(conv.weights, engine_);
    memory plain(memory::desc(s.weights(), dt::s8, tag::oihw), engine_, writable(weight));
    dnnl::reorder(plain, p.values).execute(stream_, plain, p.values);
    stream_.wait();
    return p.values;
  }

  std::mutex mutex_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<ShapeKey, std::optional<Conv>> convs_;
  std::map<std::pair<const std::int8_t*, ShapeKey>, PreparedWeights> weights_;
};

}  // namespace

bool onednn_int8_conv2d_sums(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, i64 N, i64 C,
                             i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  const ConvShape s = checked_shape("int8 convolution", N, C, H, W, OC, KH, KW, stride, pad);
  static const bool available = onednn_has_int8_dot_products();
  if (!available) return false;
  static Int8Convolutions convolutions;
  return convolutions.run(acc, inp, weight, s);
}

}  // namespace sb::kernels::cpu
