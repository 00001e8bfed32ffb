// SPDX-License-Identifier: Apache-2.0
// Builds the ModelDescription of a GPT or ResNet from the trainer's shape and FLOP functions.
// Leaves out any per-backend detail (workspace, kernel scratch).
#include "costmodel/model_description.hpp"

#include <fmt/format.h>

#include <numeric>

#include "core/check.hpp"
#include "costmodel/closed_forms.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb::costmodel {

namespace {
template <class F>
double sum_layers(const std::vector<LayerCost>& layers, F&& field) {
  return std::accumulate(layers.begin(), layers.end(), 0.0,
                         [&](double acc, const LayerCost& l) { return acc + field(l); });
}
template <class F>
double sum_units(const std::vector<UnitCost>& units, F&& field) {
  return std::accumulate(units.begin(), units.end(), 0.0,
                         [&](double acc, const UnitCost& u) { return acc + field(u); });
}
void fill_weight_bytes(ModelDescription& d) {
  for (UnitCost& unit : d.units)
    for (LayerCost& layer : unit.layers) layer.weight_bytes = layer.parameters * d.element_bytes;
}
}  // namespace

double UnitCost::forward_flops() const {
  return sum_layers(layers, [](const LayerCost& l) { return l.forward_flops; });
}
double UnitCost::parameters() const {
  return sum_layers(layers, [](const LayerCost& l) { return l.parameters; });
}
double UnitCost::activation_bytes() const {
  return sum_layers(layers, [](const LayerCost& l) { return l.activation_bytes; });
}
double ModelDescription::parameters() const {
  return sum_units(units, [](const UnitCost& u) { return u.parameters(); });
}
double ModelDescription::forward_flops() const {
  return sum_units(units, [](const UnitCost& u) { return u.forward_flops(); });
}

namespace {

// What every description starts from: the family, the name and the micro-batch it is made at.
ModelDescription description_of(ModelFamily family, const char* kind, const std::string& name,
                                std::int64_t micro_batch, double element_bytes) {
  SB_USER_CHECK(micro_batch > 0, "{} '{}': the micro-batch must be positive, got {}", kind, name, micro_batch);
  ModelDescription d;
  d.family = family;
  d.name = name;
  d.micro_batch = micro_batch;
  d.element_bytes = element_bytes;
  return d;
}

}  // namespace

BlockActivationTerms gpt_block_activation_terms(const gpt::GptConfig& config) {
  const double kv_fraction =
      static_cast<double>(gpt::gpt_kv_heads(config)) / static_cast<double>(config.heads);
  const double width = static_cast<double>(gpt::gpt_mlp_width(config)) / static_cast<double>(config.channels);
  switch (config.block) {
    case gpt::GptBlock::gpt2: return block_activation_terms(kv_fraction, 2.0 * 2.0 * width, true);
    case gpt::GptBlock::llama: return block_activation_terms(kv_fraction, 3.0 * 2.0 * width, false);
    case gpt::GptBlock::nemotron: return block_activation_terms(kv_fraction, 2.0 * 2.0 * width, false);
  }
  SB_CHECK(false, "activation terms of model {}: unknown block kind", config.name);
  return {};
}

ModelDescription describe_gpt(const gpt::GptConfig& config, std::int64_t micro_batch,
                              std::int64_t seq_len, double element_bytes) {
  gpt::validate_gpt_config(config);
  SB_USER_CHECK(seq_len > 0 && seq_len <= config.max_seq_len,
                "gpt '{}': seq_len must be in [1, {}], got {}", config.name, config.max_seq_len, seq_len);
  ModelDescription d = description_of(ModelFamily::gpt, "gpt", config.name, micro_batch, element_bytes);
  d.seq_len = seq_len;
  d.gpt = config;
  const double b = static_cast<double>(micro_batch), s = static_cast<double>(seq_len);
  const double C = static_cast<double>(config.channels), V = static_cast<double>(config.vocab);
  const double boundary = b * s * C * element_bytes;  // (b, s, C) between units

  const bool llama = gpt::gpt_llama_style(config);
  const std::string embedding_shape =
      llama ? fmt::format("wte (V,C) = ({},{}), rotary positions", config.vocab, config.channels)
            : fmt::format("wte (V,C) = ({},{}), wpe (maxT,C) = ({},{})", config.vocab, config.channels,
                          config.max_seq_len, config.channels);
  d.units.push_back({"embedding",
                     {{"embedding", embedding_shape,
                       0.0, static_cast<double>(gpt::gpt_embedding_parameter_count(config)), 0.0, 0.0}},
                     boundary});
  const double block_activations =
      activation_bytes_per_layer(s, b, C, static_cast<double>(config.heads), 1.0, false, Recompute::none, false,
                                 gpt_block_activation_terms(config)) * element_bytes / 2.0;
  for (std::int64_t l = 0; l < config.layers; ++l) {
    const std::string name = fmt::format("block.{}", l);
    d.units.push_back({name,
                       {{name,
                         llama ? fmt::format("in (b,s,C) = ({},{},{}), {} heads, {} key/value heads, {} MLP {}",
                                             micro_batch, seq_len, config.channels, config.heads,
                                             config.kv_heads, gpt::gpt_mlp_matrices(config) == 3 ? "gated" : "plain",
                                             config.ffn_hidden)
                               : fmt::format("in (b,s,C) = ({},{},{}), {} heads", micro_batch, seq_len,
                                             config.channels, config.heads),
                         gpt::gpt_block_forward_flops(config, micro_batch, seq_len),
                         static_cast<double>(gpt::gpt_block_parameter_count(config)), 0.0, block_activations}},
                       boundary});
  }
  d.units.push_back(
      {"head",
       {{"final_layernorm", fmt::format("(b,s,C) = ({},{},{})", micro_batch, seq_len, config.channels),
         0.0, static_cast<double>(gpt::gpt_final_layernorm_parameter_count(config)), 0.0, 0.0},
        {"logits", fmt::format("(b,s,V) = ({},{},{}), {}", micro_batch, seq_len, config.vocab,
                               llama ? "its own head (V,C)" : "tied to wte"),
         gpt::gpt_head_forward_flops(config, micro_batch, seq_len),
         static_cast<double>(gpt::gpt_head_parameter_count(config)), 0.0, b * s * V * 4.0}},
       0.0});
  fill_weight_bytes(d);
  return d;
}

ModelDescription describe_resnet(const resnet::ResnetConfig& config, std::int64_t micro_batch,
                                 double element_bytes) {
  ModelDescription d = description_of(ModelFamily::resnet, "resnet", config.name, micro_batch, element_bytes);
  d.resnet = config;
  const double N = static_cast<double>(micro_batch);
  for (const resnet::ResnetUnit& unit : resnet::resnet_pipeline_units(config)) {
    d.units.push_back({unit.name, {}, N * static_cast<double>(unit.out_floats) * element_bytes});
  }
  // Each layer belongs to the unit its name starts with ("stem.", "<block>."), else the head:
  // the rule resnet_pipeline_units applies.
  for (const resnet::ResnetLayer& layer : resnet::resnet_layers(config)) {
    std::size_t u = d.units.size() - 1;
    for (std::size_t i = 0; i + 1 < d.units.size(); ++i) {
      if (layer.name.starts_with(d.units[i].name + ".")) u = i;
    }
    const double out = N * static_cast<double>(layer.out_channels * layer.out_size * layer.out_size);
    d.units[u].layers.push_back(
        {layer.name,
         fmt::format("(N,C,H,W) = ({},{},{},{}) -> ({},{},{},{})", micro_batch, layer.in_channels,
                     layer.in_size, layer.in_size, micro_batch, layer.out_channels, layer.out_size,
                     layer.out_size),
         layer.forward_flops(micro_batch), static_cast<double>(layer.parameter_count()),
         0.0, out * element_bytes,
         // running mean and variance: as many as a BatchNorm's weight and bias
         layer.kind == resnet::LayerKind::batchnorm2d ? static_cast<double>(layer.parameter_count()) : 0.0});
  }
  fill_weight_bytes(d);
  return d;
}

}  // namespace sb::costmodel
