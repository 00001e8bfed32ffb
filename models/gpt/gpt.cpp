// GPT-2 forward and backward as a fixed sequence of kernel calls over named views, llm.c's
// train_gpt2.c on a runtime-chosen kernel backend. Leaves out the data loader and the loop.
#include "models/gpt/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::gpt {

using i64 = std::int64_t;

std::array<float**, kParameterTensorCount> ParameterTensors::members() {
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

// Calls f(view, numel) for every activation tensor in storage order: the one place that
// knows the activation layout, used both to size the allocation and to point the views.
template <class F>
void for_each_view(ActivationTensors& a, const GptConfig& c, i64 B, i64 T, F&& f) {
  const i64 L = c.layers, C = c.channels, NH = c.heads, V = c.vocab, BT = B * T;
  f(a.encoded, BT * C);
  f(a.ln1, L * BT * C);
  f(a.ln1_mean, L * BT);
  f(a.ln1_rstd, L * BT);
  f(a.qkv, L * BT * 3 * C);
  f(a.att, L * B * NH * T * T);
  f(a.atty, L * BT * C);
  f(a.attproj, L * BT * C);
  f(a.residual2, L * BT * C);
  f(a.ln2, L * BT * C);
  f(a.ln2_mean, L * BT);
  f(a.ln2_rstd, L * BT);
  f(a.fch, L * BT * 4 * C);
  f(a.fch_gelu, L * BT * 4 * C);
  f(a.fcproj, L * BT * C);
  f(a.residual3, L * BT * C);
  f(a.lnf, BT * C);
  f(a.lnf_mean, BT);
  f(a.lnf_rstd, BT);
  f(a.logits, BT * V);
  f(a.probs, BT * V);
  f(a.losses, BT);
}

// The same for the backward scratch. The per-block tensors come last, from dresidual_in
// on, so zeroing them before each block is one memset.
template <class F>
void for_each_view(ActivationGradients& g, const GptConfig& c, i64 B, i64 T, F&& f) {
  const i64 C = c.channels, V = c.vocab, BT = B * T;
  f(g.dlosses, BT);
  f(g.dlogits, BT * V);
  f(g.dlnf, BT * C);
  f(g.dresidual_out, BT * C);
  f(g.dresidual_in, BT * C);
  f(g.dln1, BT * C);
  f(g.dqkv, BT * 3 * C);
  f(g.datty, BT * C);
  f(g.dattproj, BT * C);
  f(g.dresidual2, BT * C);
  f(g.dln2, BT * C);
  f(g.dfch, BT * 4 * C);
  f(g.dfch_gelu, BT * 4 * C);
  f(g.dfcproj, BT * C);
}

template <class Tensors>
i64 count_floats(const GptConfig& c, i64 B, i64 T) {
  Tensors views{};
  i64 n = 0;
  for_each_view(views, c, B, T, [&](float*&, i64 numel) { n += numel; });
  return n;
}

// Points every view into base for the layout at (B, T) and returns the floats used.
template <class Tensors>
i64 point_views(Tensors& views, float* base, const GptConfig& c, i64 B, i64 T) {
  i64 n = 0;
  for_each_view(views, c, B, T, [&](float*& view, i64 numel) {
    view = base + n;
    n += numel;
  });
  return n;
}

void point_parameter_views(ParameterTensors& views, float* base, const GptConfig& config) {
  const auto specs = gpt_parameter_specs(config);
  const auto members = views.members();
  for (int k = 0; k < kParameterTensorCount; ++k) {
    *members[static_cast<std::size_t>(k)] = base;
    base += specs[static_cast<std::size_t>(k)].shape.numel();
  }
}

constexpr i64 kFloat = static_cast<i64>(sizeof(float));

}  // namespace

i64 gpt_activation_bytes(const GptConfig& config, i64 B, i64 T) {
  return kFloat * count_floats<ActivationTensors>(config, B, T);
}

i64 gpt_activation_gradient_bytes(const GptConfig& config, i64 B, i64 T) {
  return kFloat * count_floats<ActivationGradients>(config, B, T);
}

GptModel::GptModel(const GptConfig& config, i64 batch, i64 seq_len, kernels::Backend backend,
                   MemoryTracker& tracker)
    : config_(config),
      backend_(backend),
      k_(&kernels::kernels_for(backend)),
      max_batch_(batch),
      max_seq_len_(seq_len),
      parameter_count_(gpt_parameter_count(config)) {
  validate_gpt_config(config_);
  SB_USER_CHECK(batch > 0, "gpt '{}': batch must be positive, got {}", config_.name, batch);
  SB_USER_CHECK(seq_len > 0 && seq_len <= config_.max_seq_len,
                "gpt '{}': seq_len must be in [1, max_seq_len = {}], got {}", config_.name,
                config_.max_seq_len, seq_len);
  i64 spec_count = 0;
  for (const auto& spec : gpt_parameter_specs(config_)) spec_count += spec.shape.numel();
  SB_CHECK(spec_count == parameter_count_, "gpt parameter shapes sum to {}, formula gives {}",
           spec_count, parameter_count_);

  const i64 param_bytes = kFloat * parameter_count_;
  params_memory_ = TrackedBuffer(tracker, MemoryCategory::params, param_bytes, "gpt params");
  grads_memory_ = TrackedBuffer(tracker, MemoryCategory::grads, param_bytes, "gpt grads");
  acts_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                               gpt_activation_bytes(config_, batch, seq_len), "gpt activations");
  inputs_memory_ = TrackedBuffer(tracker, MemoryCategory::activations,
                                 2 * batch * seq_len * static_cast<i64>(sizeof(std::int32_t)),
                                 "gpt tokens, targets");
  acts_grads_memory_ =
      TrackedBuffer(tracker, MemoryCategory::workspace,
                    gpt_activation_gradient_bytes(config_, batch, seq_len), "gpt activation grads");
  point_parameter_views(params_, params_memory_.as<float>(), config_);
  point_parameter_views(grads_, grads_memory_.as<float>(), config_);
  tokens_ = inputs_memory_.as<std::int32_t>();
  targets_ = tokens_ + batch * seq_len;
}

void GptModel::init_weights(std::uint64_t seed) {
  const auto specs = gpt_parameter_specs(config_);
  const auto members = params_.members();
  for (int k = 0; k < kParameterTensorCount; ++k) {
    const ParameterSpec& spec = specs[static_cast<std::size_t>(k)];
    float* p = *members[static_cast<std::size_t>(k)];
    const i64 n = spec.shape.numel();
    const CounterRng rng(seed, static_cast<std::uint64_t>(k));
    switch (spec.init) {
      case ParameterInit::zeros: std::fill(p, p + n, 0.0f); break;
      case ParameterInit::ones: std::fill(p, p + n, 1.0f); break;
      case ParameterInit::normal_0_02:
#pragma omp parallel for schedule(static)
        for (i64 i = 0; i < n; ++i) {
          p[i] = static_cast<float>(0.02 * rng.normal(static_cast<std::uint64_t>(i)));
        }
        break;
    }
  }
}

float GptModel::forward(const std::int32_t* tokens, const std::int32_t* targets, i64 B, i64 T) {
  SB_CHECK(B >= 1 && B <= max_batch_, "gpt forward: B = {} outside [1, {}]", B, max_batch_);
  SB_CHECK(T >= 1 && T <= max_seq_len_, "gpt forward: T = {} outside [1, {}]", T, max_seq_len_);
  SB_CHECK(tokens != nullptr, "gpt forward: no tokens");
  const i64 L = config_.layers, C = config_.channels, NH = config_.heads, V = config_.vocab;
  const i64 BT = B * T;
  for (i64 i = 0; i < BT; ++i) {
    SB_CHECK(tokens[i] >= 0 && tokens[i] < V, "gpt forward: token {} at {} outside [0, {})",
             tokens[i], i, V);
    SB_CHECK(!targets || (targets[i] >= 0 && targets[i] < V),
             "gpt forward: target {} at {} outside [0, {})", targets[i], i, V);
  }
  std::copy(tokens, tokens + BT, tokens_);
  if (targets) std::copy(targets, targets + BT, targets_);
  last_B_ = B;
  last_T_ = T;
  backward_ready_ = targets != nullptr;
  point_views(acts_, acts_memory_.as<float>(), config_, B, T);

  const ParameterTensors& p = params_;
  ActivationTensors& a = acts_;
  k_->embedding_forward(a.encoded, tokens_, p.wte, p.wpe, B, T, C);
  for (i64 l = 0; l < L; ++l) {
    const float* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;  // (B,T,C)
    // this block's weights
    const float* ln1w = p.ln1w + l * C;
    const float* ln1b = p.ln1b + l * C;
    const float* qkvw = p.qkvw + l * 3 * C * C;
    const float* qkvb = p.qkvb + l * 3 * C;
    const float* attprojw = p.attprojw + l * C * C;
    const float* attprojb = p.attprojb + l * C;
    const float* ln2w = p.ln2w + l * C;
    const float* ln2b = p.ln2b + l * C;
    const float* fcw = p.fcw + l * 4 * C * C;
    const float* fcb = p.fcb + l * 4 * C;
    const float* fcprojw = p.fcprojw + l * C * 4 * C;
    const float* fcprojb = p.fcprojb + l * C;
    // this block's activations
    float* ln1 = a.ln1 + l * BT * C;
    float* ln1_mean = a.ln1_mean + l * BT;
    float* ln1_rstd = a.ln1_rstd + l * BT;
    float* qkv = a.qkv + l * BT * 3 * C;
    float* att = a.att + l * B * NH * T * T;
    float* atty = a.atty + l * BT * C;
    float* attproj = a.attproj + l * BT * C;
    float* residual2 = a.residual2 + l * BT * C;
    float* ln2 = a.ln2 + l * BT * C;
    float* ln2_mean = a.ln2_mean + l * BT;
    float* ln2_rstd = a.ln2_rstd + l * BT;
    float* fch = a.fch + l * BT * 4 * C;
    float* fch_gelu = a.fch_gelu + l * BT * 4 * C;
    float* fcproj = a.fcproj + l * BT * C;
    float* residual3 = a.residual3 + l * BT * C;

    k_->layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, ln1w, ln1b, BT, C);
    k_->matmul_forward(qkv, ln1, qkvw, qkvb, BT, C, 3 * C);
    k_->attention_forward(atty, att, qkv, B, T, C, NH);
    k_->matmul_forward(attproj, atty, attprojw, attprojb, BT, C, C);
    k_->residual_forward(residual2, residual, attproj, BT * C);
    k_->layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, ln2w, ln2b, BT, C);
    k_->matmul_forward(fch, ln2, fcw, fcb, BT, C, 4 * C);
    k_->gelu_forward(fch_gelu, fch, BT * 4 * C);
    k_->matmul_forward(fcproj, fch_gelu, fcprojw, fcprojb, BT, 4 * C, C);
    k_->residual_forward(residual3, residual2, fcproj, BT * C);
  }
  const float* last_residual = a.residual3 + (L - 1) * BT * C;  // (B,T,C)
  k_->layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last_residual, p.lnfw, p.lnfb, BT, C);
  k_->matmul_forward(a.logits, a.lnf, p.wte, nullptr, BT, C, V);  // head tied to wte (V,C)

  if (!targets) return std::numeric_limits<float>::quiet_NaN();
  k_->crossentropy_forward(a.losses, a.probs, a.logits, targets_, BT, V);
  double sum = 0.0;
  for (i64 i = 0; i < BT; ++i) sum += a.losses[i];
  return static_cast<float>(sum / static_cast<double>(BT));
}

void GptModel::zero_grad() {
  std::memset(grads_memory_.data(), 0, static_cast<std::size_t>(grads_memory_.bytes()));
}

void GptModel::backward() {
  SB_CHECK(backward_ready_, "gpt backward needs a forward with targets first");
  const i64 B = last_B_, T = last_T_, BT = B * T;
  const i64 L = config_.layers, C = config_.channels, NH = config_.heads, V = config_.vocab;
  const ParameterTensors& p = params_;
  const ParameterTensors& g = grads_;
  const ActivationTensors& a = acts_;
  ActivationGradients& d = acts_grads_;
  const i64 used = point_views(d, acts_grads_memory_.as<float>(), config_, B, T);
  const float* scratch_end = acts_grads_memory_.as<float>() + used;
  const auto zero = [](float* begin, const float* end) {
    std::memset(begin, 0, static_cast<std::size_t>(end - begin) * sizeof(float));
  };
  const auto ready = [&](const float* grad, i64 count) {
    if (gradient_ready_) gradient_ready_(grad - g.wte, count);
  };

  // the head: mean loss -> logits -> final LayerNorm
  zero(d.dlosses, d.dresidual_in);
  std::fill(d.dlosses, d.dlosses + BT, static_cast<float>(1.0 / static_cast<double>(BT)));
  k_->crossentropy_backward(d.dlogits, a.probs, targets_, d.dlosses, BT, V);
  k_->matmul_backward(d.dlnf, g.wte, nullptr, d.dlogits, a.lnf, p.wte, BT, C, V);
  k_->layernorm_backward(d.dresidual_out, g.lnfw, g.lnfb, d.dlnf, a.residual3 + (L - 1) * BT * C,
                         p.lnfw, a.lnf_mean, a.lnf_rstd, BT, C);
  ready(g.lnfw, C);
  ready(g.lnfb, C);

  // the blocks, last to first; dout is the gradient of block l's output, din of its input
  float* dout = d.dresidual_out;
  float* din = d.dresidual_in;
  for (i64 l = L - 1; l >= 0; --l) {
    zero(din, din + BT * C);
    zero(d.dln1, scratch_end);
    const float* residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;  // (B,T,C)
    const float* ln1w = p.ln1w + l * C;
    const float* qkvw = p.qkvw + l * 3 * C * C;
    const float* attprojw = p.attprojw + l * C * C;
    const float* ln2w = p.ln2w + l * C;
    const float* fcw = p.fcw + l * 4 * C * C;
    const float* fcprojw = p.fcprojw + l * C * 4 * C;
    float* dln1w = g.ln1w + l * C;
    float* dln1b = g.ln1b + l * C;
    float* dqkvw = g.qkvw + l * 3 * C * C;
    float* dqkvb = g.qkvb + l * 3 * C;
    float* dattprojw = g.attprojw + l * C * C;
    float* dattprojb = g.attprojb + l * C;
    float* dln2w = g.ln2w + l * C;
    float* dln2b = g.ln2b + l * C;
    float* dfcw = g.fcw + l * 4 * C * C;
    float* dfcb = g.fcb + l * 4 * C;
    float* dfcprojw = g.fcprojw + l * C * 4 * C;
    float* dfcprojb = g.fcprojb + l * C;
    const float* ln1 = a.ln1 + l * BT * C;
    const float* ln1_mean = a.ln1_mean + l * BT;
    const float* ln1_rstd = a.ln1_rstd + l * BT;
    const float* qkv = a.qkv + l * BT * 3 * C;
    const float* att = a.att + l * B * NH * T * T;
    const float* atty = a.atty + l * BT * C;
    const float* residual2 = a.residual2 + l * BT * C;
    const float* ln2 = a.ln2 + l * BT * C;
    const float* ln2_mean = a.ln2_mean + l * BT;
    const float* ln2_rstd = a.ln2_rstd + l * BT;
    const float* fch = a.fch + l * BT * 4 * C;
    const float* fch_gelu = a.fch_gelu + l * BT * 4 * C;

    // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2))))
    k_->residual_backward(d.dresidual2, d.dfcproj, dout, BT * C);
    k_->matmul_backward(d.dfch_gelu, dfcprojw, dfcprojb, d.dfcproj, fch_gelu, fcprojw, BT, 4 * C, C);
    k_->gelu_backward(d.dfch, fch, d.dfch_gelu, BT * 4 * C);
    k_->matmul_backward(d.dln2, dfcw, dfcb, d.dfch, ln2, fcw, BT, C, 4 * C);
    k_->layernorm_backward(d.dresidual2, dln2w, dln2b, d.dln2, residual2, ln2w, ln2_mean,
                           ln2_rstd, BT, C);
    // attention: residual2 = residual + attproj(attention(qkv(ln1(residual))))
    k_->residual_backward(din, d.dattproj, d.dresidual2, BT * C);
    k_->matmul_backward(d.datty, dattprojw, dattprojb, d.dattproj, atty, attprojw, BT, C, C);
    k_->attention_backward(d.dqkv, d.datty, qkv, att, B, T, C, NH);
    k_->matmul_backward(d.dln1, dqkvw, dqkvb, d.dqkv, ln1, qkvw, BT, C, 3 * C);
    k_->layernorm_backward(din, dln1w, dln1b, d.dln1, residual, ln1w, ln1_mean, ln1_rstd, BT, C);
    for (const auto& [grad, count] : {std::pair<const float*, i64>{dfcprojw, C * 4 * C}, {dfcprojb, C},
                                      {dfcw, 4 * C * C}, {dfcb, 4 * C}, {dln2w, C}, {dln2b, C},
                                      {dattprojw, C * C}, {dattprojb, C}, {dqkvw, 3 * C * C},
                                      {dqkvb, 3 * C}, {dln1w, C}, {dln1b, C}})
      ready(grad, count);
    std::swap(din, dout);
  }
  k_->embedding_backward(g.wte, g.wpe, dout, tokens_, B, T, C);  // dout: d(encoded)
  ready(g.wte, V * C);
  ready(g.wpe, config_.max_seq_len * C);
}

std::vector<ParameterView> GptModel::parameter_views() {
  const auto specs = gpt_parameter_specs(config_);
  const auto params = params_.members();
  const auto grads = grads_.members();
  std::vector<ParameterView> views;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    views.push_back({specs[k].name, *params[k], *grads[k], specs[k].shape.numel(),
                     specs[k].weight_decay});
  }
  return views;
}

std::vector<optim::ParameterSlice> GptModel::parameter_slices() {
  std::vector<optim::ParameterSlice> slices;
  for (auto& view : parameter_views()) {
    slices.push_back({std::move(view.name), view.param, view.grad, view.numel, view.weight_decay});
  }
  return slices;
}

}  // namespace sb::gpt
