// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/onednn_int8_matmul.hpp"

#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/check.hpp"
#include "core/cpu_isa.hpp"

namespace sb::kernels::cpu {

namespace {

using dnnl::memory;

struct Gemm {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  memory::desc src, wei, dst;
};

// dst (BT,OC) s32 = src (BT,C) s8 · wei (C,OC) s8, wei the (OC,C) row-major weight read
// transposed; nullopt where oneDNN's choice for the shape is not a VNNI or AMX kernel.
std::optional<Gemm> make_gemm(i64 BT, i64 C, i64 OC, const dnnl::engine& engine) {
  using dt = memory::data_type;
  Gemm gemm;
  gemm.src = memory::desc({BT, C}, dt::s8, memory::dims{C, 1});
  gemm.wei = memory::desc({C, OC}, dt::s8, memory::dims{1, C});
  gemm.dst = memory::desc({BT, OC}, dt::s32, memory::dims{OC, 1});
  gemm.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(gemm.src, gemm.wei, gemm.dst), dnnl::primitive_attr(),
                                         engine);
  const std::string_view impl = gemm.pd.impl_info_str();
  if (impl.find("vnni") == std::string_view::npos && impl.find("amx") == std::string_view::npos)
    return std::nullopt;
  gemm.primitive = dnnl::matmul(gemm.pd);
  return gemm;
}

void* writable(const void* p) { return const_cast<void*>(p); }

// The process's primitives, one per shape (nullopt: oneDNN offers no exact kernel for it).
class Int8Gemms {
 public:
  bool run(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, i64 BT, i64 C, i64 OC) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_tuple(BT, C, OC);
    auto found = gemms_.find(key);
    if (found == gemms_.end()) found = gemms_.emplace(key, make_gemm(BT, C, OC, engine_)).first;
    if (!found->second) return false;
    const Gemm& gemm = *found->second;
    gemm.primitive.execute(stream_, {{DNNL_ARG_SRC, memory(gemm.src, engine_, writable(inp))},
                                     {DNNL_ARG_WEIGHTS, memory(gemm.wei, engine_, writable(weight))},
                                     {DNNL_ARG_DST, memory(gemm.dst, engine_, acc)}});
    stream_.wait();
    return true;
  }

 private:
  std::mutex mutex_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<std::tuple<i64, i64, i64>, std::optional<Gemm>> gemms_;
};

}  // namespace

bool onednn_int8_sums(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, i64 BT, i64 C, i64 OC) {
  SB_CHECK(BT > 0 && C > 0 && OC > 0, "oneDNN int8 sums: extents BT={} C={} OC={} must all be positive", BT, C, OC);
  static const bool available = onednn_has_int8_dot_products();
  if (!available) return false;
  static Int8Gemms gemms;
  return gemms.run(acc, inp, weight, BT, C, OC);
}

}  // namespace sb::kernels::cpu
