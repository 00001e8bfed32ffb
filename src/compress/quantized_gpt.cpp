// SPDX-License-Identifier: Apache-2.0
// GPT's int8 inference (see quantized_gpt.hpp).
#include "compress/quantized_gpt.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::compress {

using i64 = std::int64_t;

QuantizedGpt::QuantizedGpt(gpt::GptModel& model, i64 max_batch, i64 max_seq_len,
                           kernels::Backend backend, MemoryTracker& tracker)
    : config_(model.config()), max_batch_(max_batch), max_seq_len_(max_seq_len),
      k_(kernels::kernels_for(backend)) {
  SB_USER_CHECK(backend != kernels::Backend::cuda && model.backend() != kernels::Backend::cuda,
                "int8 inference runs on the cpu or reference back-end, not cuda");
  SB_CHECK(model.parameter_count() == gpt::gpt_parameter_count(config_),
           "QuantizedGpt needs the whole model on one rank");
  SB_CHECK(max_batch >= 1 && max_seq_len >= 1 && max_seq_len <= config_.max_seq_len,
           "QuantizedGpt: batch {} × {} (maxT {})", max_batch, max_seq_len, config_.max_seq_len);
  const i64 L = config_.layers, C = config_.channels, V = config_.vocab, maxT = config_.max_seq_len;
  const gpt::ParameterTensors& p = model.params();

  fp32_ = TrackedBuffer(tracker, MemoryCategory::params, 4 * (V * C + maxT * C + 4 * L * C + 2 * C),
                        "quantized_gpt.fp32");
  float* f = fp32_.as<float>();
  auto keep = [&f](const float* src, i64 n) {
    float* dst = f;
    std::copy(src, src + n, dst);
    f += n;
    return dst;
  };
  wte_ = keep(p.wte, V * C);
  wpe_ = keep(p.wpe, maxT * C);
  for (i64 l = 0; l < L; ++l) {
    const std::string name = "blocks." + std::to_string(l);
    blocks_.push_back(Block{
        QuantizedLinear(name + ".qkv", p.qkvw + l * 3 * C * C, p.qkvb + l * 3 * C, 3 * C, C, tracker),
        QuantizedLinear(name + ".attproj", p.attprojw + l * C * C, p.attprojb + l * C, C, C, tracker),
        QuantizedLinear(name + ".fc", p.fcw + l * 4 * C * C, p.fcb + l * 4 * C, 4 * C, C, tracker),
        QuantizedLinear(name + ".fcproj", p.fcprojw + l * 4 * C * C, p.fcprojb + l * C, C, 4 * C, tracker),
        keep(p.ln1w + l * C, C), keep(p.ln1b + l * C, C), keep(p.ln2w + l * C, C),
        keep(p.ln2b + l * C, C)});
  }
  lnfw_ = keep(p.lnfw, C);
  lnfb_ = keep(p.lnfb, C);

  const i64 BT = max_batch * max_seq_len, NH = config_.heads;
  const i64 floats = 5 * BT * C + 2 * BT + 3 * BT * C + max_batch * NH * max_seq_len * max_seq_len +
                     2 * BT * 4 * C + 2 * BT * V + BT;
  acts_ = TrackedBuffer(tracker, MemoryCategory::activations, 4 * floats, "quantized_gpt.acts");
  float* a = acts_.as<float>();
  auto take = [&a](i64 n) {
    float* view = a;
    a += n;
    return view;
  };
  residual_ = take(BT * C), residual2_ = take(BT * C), ln_ = take(BT * C), atty_ = take(BT * C);
  proj_ = take(BT * C), mean_ = take(BT), rstd_ = take(BT), qkv_ = take(3 * BT * C);
  att_ = take(max_batch * NH * max_seq_len * max_seq_len), fch_ = take(4 * BT * C);
  fch_gelu_ = take(4 * BT * C), logits_ = take(BT * V), probs_ = take(BT * V), losses_ = take(BT);
  scratch_ = TrackedBuffer(tracker, MemoryCategory::workspace, 4 * BT * C, "quantized_gpt.input_q");
  input_q_ = scratch_.as<std::int8_t>();
}

float QuantizedGpt::forward(const std::int32_t* tokens, const std::int32_t* targets, i64 B, i64 T,
                            InferenceMode mode) {
  SB_CHECK(B >= 1 && B <= max_batch_ && T >= 1 && T <= max_seq_len_,
           "QuantizedGpt forward: (B, T) = ({}, {}) outside ({}, {})", B, T, max_batch_, max_seq_len_);
  const i64 C = config_.channels, NH = config_.heads, V = config_.vocab, BT = B * T;
  for (i64 i = 0; i < BT; ++i)
    SB_CHECK(tokens[i] >= 0 && tokens[i] < V && targets[i] >= 0 && targets[i] < V,
             "QuantizedGpt forward: token or target outside [0, {}) at {}", V, i);
  k_.embedding_forward(residual_, tokens, wte_, wpe_, B, T, C);
  for (Block& b : blocks_) {
    k_.layernorm_forward(ln_, mean_, rstd_, residual_, b.ln1w, b.ln1b, BT, C);
    b.qkv.forward(qkv_, ln_, input_q_, BT, mode, k_);
    k_.attention_forward(atty_, att_, qkv_, B, T, C, NH);
    b.attproj.forward(proj_, atty_, input_q_, BT, mode, k_);
    k_.residual_forward(residual2_, residual_, proj_, BT * C);
    k_.layernorm_forward(ln_, mean_, rstd_, residual2_, b.ln2w, b.ln2b, BT, C);
    b.fc.forward(fch_, ln_, input_q_, BT, mode, k_);
    k_.gelu_forward(fch_gelu_, fch_, BT * 4 * C);
    b.fcproj.forward(proj_, fch_gelu_, input_q_, BT, mode, k_);
    k_.residual_forward(residual_, residual2_, proj_, BT * C);
  }
  k_.layernorm_forward(ln_, mean_, rstd_, residual_, lnfw_, lnfb_, BT, C);
  k_.matmul_forward(logits_, ln_, wte_, nullptr, BT, C, V);
  k_.crossentropy_forward(losses_, probs_, logits_, targets, BT, V);
  double sum = 0;
  for (i64 i = 0; i < BT; ++i) sum += losses_[i];
  return static_cast<float>(sum / static_cast<double>(BT));
}

void QuantizedGpt::finish_calibration() {
  for (Block& b : blocks_)
    for (QuantizedLinear* l : {&b.qkv, &b.attproj, &b.fc, &b.fcproj}) l->finish_calibration();
}

i64 QuantizedGpt::weight_bytes() const {
  i64 bytes = fp32_.bytes();
  for (const Block& b : blocks_)
    bytes += b.qkv.stored_bytes() + b.attproj.stored_bytes() + b.fc.stored_bytes() + b.fcproj.stored_bytes();
  return bytes;
}

}  // namespace sb::compress
