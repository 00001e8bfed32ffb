// SPDX-License-Identifier: Apache-2.0
// bf16 GEMMs of the linear layer as oneDNN matmul primitives, created once per shape and
// reused; row-major operands are described by strides, so no operand is copied or reordered.
// dbias is a column sum in fp32 (a bandwidth-bound loop, not a GEMM). fp16 operands are split
// into bf16 pairs in scratch first (split_fp16.hpp), laid out so that one GEMM three times as
// deep sums hi.hi + hi.lo + lo.hi into an fp32 result, which is then rounded to fp16 once.
#include "kernels/cpu/onednn_bf16_matmul.hpp"

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/check.hpp"
#include "kernels/cpu/column_sums.hpp"
#include "kernels/cpu/fp16_rows.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/split_fp16.hpp"

namespace sb::kernels::cpu {

namespace {

using dnnl::memory;

// The three GEMMs of a linear layer: out = inp . weight^T (+ bias), dinp += dout . weight,
// dweight += dout^T . inp; the split_ kinds are the same over fp16's bf16 parts, three times as
// deep, with fp32 results.
enum class GemmKind {
  forward,
  forward_bias,
  input_gradient,
  weight_gradient,
  split_forward,
  split_input_gradient,
  split_weight_gradient
};

// One GEMM dst (M,N) = src (M,K) . wei (K,N) over row-major buffers; a transposed operand is
// stored the other way round ((K,M) for src, (N,K) for wei).
struct GemmLayout {
  i64 M, N, K;
  bool src_transposed, wei_transposed;
  memory::data_type dst_type;
  bool bias, accumulate;  // accumulate: dst += (oneDNN's sum post-op, in fp32 before rounding)
};

GemmLayout layout_of(GemmKind kind, i64 BT, i64 C, i64 OC) {
  using dt = memory::data_type;
  switch (kind) {
    case GemmKind::forward: return {BT, OC, C, false, true, dt::bf16, false, false};
    case GemmKind::forward_bias: return {BT, OC, C, false, true, dt::bf16, true, false};
    case GemmKind::input_gradient: return {BT, C, OC, false, false, dt::bf16, false, true};
    case GemmKind::weight_gradient: return {OC, C, BT, true, false, dt::f32, false, true};
    case GemmKind::split_forward: return {BT, OC, 3 * C, false, true, dt::f32, false, false};
    case GemmKind::split_input_gradient: return {BT, C, 3 * OC, false, false, dt::f32, false, true};
    case GemmKind::split_weight_gradient: return {OC, C, 3 * BT, true, false, dt::f32, false, true};
  }
  SB_CHECK(false, "oneDNN bf16 matmul: unknown GEMM kind {}", static_cast<int>(kind));
  return {};
}

memory::desc matrix_desc(i64 rows, i64 cols, bool transposed, memory::data_type type) {
  return transposed ? memory::desc({rows, cols}, type, memory::dims{1, rows})
                    : memory::desc({rows, cols}, type, memory::dims{cols, 1});
}

struct Gemm {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  memory::desc src, wei, bias, dst;
  std::size_t scratchpad_bytes = 0;
};

Gemm make_gemm(const GemmLayout& g, const dnnl::engine& engine) {
  using dt = memory::data_type;
  Gemm gemm;
  gemm.src = matrix_desc(g.M, g.K, g.src_transposed, dt::bf16);
  gemm.wei = matrix_desc(g.K, g.N, g.wei_transposed, dt::bf16);
  gemm.dst = matrix_desc(g.M, g.N, false, g.dst_type);
  if (g.bias) gemm.bias = matrix_desc(1, g.N, false, dt::bf16);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul::desc desc = g.bias ? dnnl::matmul::desc(gemm.src, gemm.wei, gemm.bias, gemm.dst)
                                         : dnnl::matmul::desc(gemm.src, gemm.wei, gemm.dst);
  gemm.pd = dnnl::matmul::primitive_desc(desc, attr, engine);
  gemm.primitive = dnnl::matmul(gemm.pd);
  gemm.scratchpad_bytes = gemm.pd.scratchpad_desc().get_size();
  return gemm;
}

void* writable(const void* p) { return const_cast<void*>(p); }

}  // namespace

struct OnednnBf16Matmul::Primitives {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<GemmKind, i64, i64, i64>, Gemm> gemms;
  std::string last_implementation = "none";

  const Gemm& gemm(GemmKind kind, i64 BT, i64 C, i64 OC) {
    const auto key = std::make_tuple(kind, BT, C, OC);
    auto found = gemms.find(key);
    if (found == gemms.end()) found = gemms.emplace(key, make_gemm(layout_of(kind, BT, C, OC), engine)).first;
    return found->second;
  }
};

OnednnBf16Matmul::OnednnBf16Matmul(WideningScratch& scratch)
    : primitives_(std::make_unique<Primitives>()), scratch_(&scratch) {}

OnednnBf16Matmul::~OnednnBf16Matmul() = default;

const std::string& OnednnBf16Matmul::last_implementation() const { return primitives_->last_implementation; }

namespace {

// Runs one cached GEMM on raw pointers (bias nullptr when the GEMM has none) and waits for it;
// its scratchpad stays taken from `scratch` until the caller releases it.
void run_gemm(const Gemm& gemm, const dnnl::engine& engine, dnnl::stream& stream, WideningScratch& scratch,
              const void* src, const void* wei, const void* bias, void* dst) {
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(gemm.src, engine, writable(src))},
                                       {DNNL_ARG_WEIGHTS, memory(gemm.wei, engine, writable(wei))},
                                       {DNNL_ARG_DST, memory(gemm.dst, engine, dst)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(gemm.bias, engine, writable(bias)));
  if (gemm.scratchpad_bytes > 0) {
    const i64 floats = static_cast<i64>((gemm.scratchpad_bytes + sizeof(float) - 1) / sizeof(float));
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(gemm.pd.scratchpad_desc(), engine, scratch.take(floats)));
  }
  gemm.primitive.execute(stream, args);
  stream.wait();
}

// n bf16 values of `scratch`, 64-byte aligned, until it is released.
bf16* take_bf16(WideningScratch& scratch, i64 n) { return reinterpret_cast<bf16*>(scratch.take((n + 1) / 2)); }


void check_extents(const char* kernel, i64 BT, i64 C, i64 OC) {
  SB_CHECK(BT > 0 && C > 0 && OC > 0, "oneDNN bf16 {}: extents BT={} C={} OC={} must all be positive", kernel, BT,
           C, OC);
}

}  // namespace

void OnednnBf16Matmul::forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, i64 BT, i64 C,
                               i64 OC) {
  check_extents("matmul_forward", BT, C, OC);
  Primitives& p = *primitives_;
  const Gemm& gemm = p.gemm(bias ? GemmKind::forward_bias : GemmKind::forward, BT, C, OC);
  p.last_implementation = gemm.pd.impl_info_str();
  run_gemm(gemm, p.engine, p.stream, *scratch_, inp, weight, bias, out);
  scratch_->release_all();
}

void OnednnBf16Matmul::backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                                const bf16* weight, i64 BT, i64 C, i64 OC) {
  check_extents("matmul_backward", BT, C, OC);
  Primitives& p = *primitives_;
  const Gemm& input_gradient = p.gemm(GemmKind::input_gradient, BT, C, OC);
  run_gemm(input_gradient, p.engine, p.stream, *scratch_, dout, weight, nullptr, dinp);
  scratch_->release_all();
  const Gemm& weight_gradient = p.gemm(GemmKind::weight_gradient, BT, C, OC);
  run_gemm(weight_gradient, p.engine, p.stream, *scratch_, dout, inp, nullptr, dweight);
  p.last_implementation = weight_gradient.pd.impl_info_str();
  scratch_->release_all();
  if (dbias) add_column_sums("sb::onednn_bf16_matmul::dbias", dbias, dout, BT, OC);
}

// ---- fp16 as bf16 pairs -----------------------------------------------------------------------
// Left operands are split [hi hi lo], right ones [hi lo hi], along the GEMM's depth: side by side
// within each row where the depth runs along rows (inp and dout as src, weight as transposed
// wei), as three stacked copies where it runs down the columns (weight as wei, dout^T and inp
// in the weight gradient).

void OnednnBf16Matmul::forward(fp16* out, const fp16* inp, const fp16* weight, const fp16* bias, i64 BT, i64 C,
                               i64 OC) {
  check_extents("matmul_forward (fp16 as bf16 pairs)", BT, C, OC);
  Primitives& p = *primitives_;
  WideningScratch& scratch = *scratch_;
  bf16* inp_parts = take_bf16(scratch, BT * 3 * C);     // (BT, 3C)
  bf16* weight_parts = take_bf16(scratch, OC * 3 * C);  // (OC, 3C)
  float* sums = scratch.take(BT * OC);                  // (BT, OC)
  float* bias_values = bias ? scratch.take(OC) : nullptr;
  split_fp16_rows(inp_parts, inp, BT, C, 3 * C, C, SplitOrder::hi_hi_lo);
  split_fp16_rows(weight_parts, weight, OC, C, 3 * C, C, SplitOrder::hi_lo_hi);
  if (bias) widen_values(bias_values, bias, OC);
  const Gemm& gemm = p.gemm(GemmKind::split_forward, BT, C, OC);
  p.last_implementation = gemm.pd.impl_info_str();
  run_gemm(gemm, p.engine, p.stream, scratch, inp_parts, weight_parts, nullptr, sums);
  parallel_for_row_blocks("sb::onednn_bf16_matmul::fp16_out", BT, OC, [=](i64 r0, i64 rows) {
    float* block = sums + r0 * OC;
    if (bias_values)
      for (i64 r = 0; r < rows; ++r)
        for (i64 o = 0; o < OC; ++o) block[r * OC + o] += bias_values[o];
    narrow_values(out + r0 * OC, block, rows * OC);
  });
  scratch.release_all();
}

void OnednnBf16Matmul::backward(fp16* dinp, float* dweight, float* dbias, const fp16* dout, const fp16* inp,
                                const fp16* weight, i64 BT, i64 C, i64 OC) {
  check_extents("matmul_backward (fp16 as bf16 pairs)", BT, C, OC);
  Primitives& p = *primitives_;
  WideningScratch& scratch = *scratch_;
  // dinp += dout . weight: dout (BT, 3OC) side by side, weight (3OC, C) stacked; the sums start
  // from the widened dinp and are rounded back once.
  bf16* dout_rows = take_bf16(scratch, BT * 3 * OC);
  bf16* weight_stack = take_bf16(scratch, 3 * OC * C);
  float* dinp_sums = scratch.take(BT * C);
  split_fp16_rows(dout_rows, dout, BT, OC, 3 * OC, OC, SplitOrder::hi_hi_lo);
  split_fp16_rows(weight_stack, weight, OC, C, C, OC * C, SplitOrder::hi_lo_hi);
  parallel_for_chunks("sb::onednn_bf16_matmul::fp16_dinp_in", BT * C, kElementwiseChunk,
                      [=](i64 begin, i64 end) { widen_values(dinp_sums + begin, dinp + begin, end - begin); });
  run_gemm(p.gemm(GemmKind::split_input_gradient, BT, C, OC), p.engine, p.stream, scratch, dout_rows, weight_stack,
           nullptr, dinp_sums);
  parallel_for_chunks("sb::onednn_bf16_matmul::fp16_dinp_out", BT * C, kElementwiseChunk,
                      [=](i64 begin, i64 end) { narrow_values(dinp + begin, dinp_sums + begin, end - begin); });
  scratch.release_all();
  // dweight += dout^T . inp: both stacked, (3BT, OC) and (3BT, C)
  bf16* dout_stack = take_bf16(scratch, 3 * BT * OC);
  bf16* inp_stack = take_bf16(scratch, 3 * BT * C);
  split_fp16_rows(dout_stack, dout, BT, OC, OC, BT * OC, SplitOrder::hi_hi_lo);
  split_fp16_rows(inp_stack, inp, BT, C, C, BT * C, SplitOrder::hi_lo_hi);
  const Gemm& weight_gradient = p.gemm(GemmKind::split_weight_gradient, BT, C, OC);
  run_gemm(weight_gradient, p.engine, p.stream, scratch, dout_stack, inp_stack, nullptr, dweight);
  p.last_implementation = weight_gradient.pd.impl_info_str();
  scratch.release_all();
  if (dbias) add_column_sums("sb::onednn_bf16_matmul::dbias", dbias, dout, BT, OC);
}

}  // namespace sb::kernels::cpu
