// SPDX-License-Identifier: Apache-2.0
// Named GPT configs (trainable and spec-only) and their validation. Leaves out the model:
// spec-only sizes are never instantiated (resolve_gpt_partition refuses them).
#include "models/gpt/gpt_config.hpp"

#include <array>
#include <utility>

#include "core/check.hpp"

namespace sb::gpt {

namespace {
const std::array<GptConfig, 21>& named_configs() {
  // Spec-only sizes: layers, hidden and heads of the GPT-3 family as trained with Megatron-LM
  // (Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1: 1.3B, 6.7B, 13B,
  // 175B) and of Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
  // Clusters Using Megatron-LM", Table 1: the 530B and 1T rows), sequence 2048, vocabulary
  // 51,200 (GPT-2's 50,257 padded, as Megatron-LM does). Two GPT-3 entries are taken as
  // Megatron-LM's examples run them: 1.3B with 16 heads of 128 (the table's 24 heads of 128 do
  // not multiply to its width 2048) and 13B 5120 wide (the table's 5140 is not 40 × 128).
  // Llama 3 (Grattafiori et al. 2024, "The Llama 3 Herd of Models", Table 3: layers, model
  // dimension, FFN dimension, attention heads, key/value heads; vocabulary 128,256 (§2.2 and
  // Meta's config.json of Meta-Llama-3-8B / 70B and Llama-3.1-405B: vocab_size 128256,
  // intermediate_size, num_key_value_heads 8, tie_word_embeddings false); sequence 8192, the
  // pre-training context before long-context extension (§3.4.1)). Llama 3.1 has the same shapes
  // after that extension to 128K tokens (§3.4.2; config.json of Llama-3.1-8B / 70B / 405B:
  // max_position_embeddings 131072): the llama3.1 entries take sequences up to 131,072.
  // Llama 2 (Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models", Table 1:
  // context 4k, grouped-query attention for the 70B; Meta's config.json of Llama-2-7b, -13b and
  // -70b: hidden_size, intermediate_size 11008 / 13824 / 28672, num_attention_heads,
  // num_key_value_heads 32 / 40 / 8, vocab_size 32000, tie_word_embeddings false; the same
  // shapes in NVIDIA's NeMo-Framework-Launcher conf/training/llama/llama2_*.yaml).
  // Nemotron-4 (Parmar et al. 2024, arXiv:2402.16819, Table 1: 15B of 32 layers, hidden 6144,
  // 48 heads, 8 key/value heads, sequence 4096, vocabulary 256,000, untied embeddings; Adler et
  // al. 2024, "Nemotron-4 340B Technical Report", arXiv:2406.11704, Table 1: 96 layers, hidden
  // 18432, 96 heads, 8 key/value heads; both with an MLP of 4·hidden, as NeMo-Framework-Launcher's
  // conf/training/nemotron/nemotron_15b.yaml and nemotron_340b.yaml set ffn_hidden_size).
  static const std::array<GptConfig, 21> configs{{
      {"gpt-nano", 2, 64, 4, 64, 256},
      {"gpt-tiny", 4, 256, 8, 128, 256},
      {"gpt-small", 6, 384, 6, 256, 256},
      {"gpt2-124m", 12, 768, 12, 1024, 50304},  // GPT-2 vocab 50257 padded to 64·786
      {"gpt-1.3b", 24, 2048, 16, 2048, 51200, true},
      {"gpt-6.7b", 32, 4096, 32, 2048, 51200, true},
      {"gpt-13b", 40, 5120, 40, 2048, 51200, true},
      {"gpt-175b", 96, 12288, 96, 2048, 51200, true},
      {"gpt-530b", 105, 20480, 128, 2048, 51200, true},
      {"gpt-1t", 128, 25600, 160, 2048, 51200, true},
      {"llama3-8b", 32, 4096, 32, 8192, 128256, true, GptBlock::llama, 14336, 8},
      {"llama3-70b", 80, 8192, 64, 8192, 128256, true, GptBlock::llama, 28672, 8},
      {"llama3-405b", 126, 16384, 128, 8192, 128256, true, GptBlock::llama, 53248, 8},
      {"llama3.1-8b", 32, 4096, 32, 131072, 128256, true, GptBlock::llama, 14336, 8},
      {"llama3.1-70b", 80, 8192, 64, 131072, 128256, true, GptBlock::llama, 28672, 8},
      {"llama3.1-405b", 126, 16384, 128, 131072, 128256, true, GptBlock::llama, 53248, 8},
      {"llama2-7b", 32, 4096, 32, 4096, 32000, true, GptBlock::llama, 11008, 32},
      {"llama2-13b", 40, 5120, 40, 4096, 32000, true, GptBlock::llama, 13824, 40},
      {"llama2-70b", 80, 8192, 64, 4096, 32000, true, GptBlock::llama, 28672, 8},
      {"nemotron4-15b", 32, 6144, 48, 4096, 256000, true, GptBlock::nemotron, 24576, 8},
      {"nemotron4-340b", 96, 18432, 96, 4096, 256000, true, GptBlock::nemotron, 73728, 8},
  }};
  return configs;
}
}  // namespace

std::vector<std::string> gpt_config_names() {
  std::vector<std::string> names;
  for (const auto& config : named_configs()) names.push_back(config.name);
  return names;
}

GptConfig gpt_config_by_name(std::string_view name) {
  for (const auto& config : named_configs()) {
    if (config.name == name) return config;
  }
  throw UserError(fmt::format("unknown model '{}' (known: {})", name,
                              fmt::join(gpt_config_names(), ", ")));
}

void validate_gpt_config(const GptConfig& config) {
  const std::array<std::pair<const char*, std::int64_t>, 5> sizes{{
      {"layers", config.layers},
      {"channels", config.channels},
      {"heads", config.heads},
      {"max_seq_len", config.max_seq_len},
      {"vocab", config.vocab},
  }};
  for (const auto& [field, value] : sizes) {
    SB_USER_CHECK(value > 0, "gpt config '{}': {} must be positive, got {}", config.name, field,
                  value);
  }
  SB_USER_CHECK(config.channels % config.heads == 0,
                "gpt config '{}': channels ({}) must be divisible by heads ({})", config.name,
                config.channels, config.heads);
  if (config.block == GptBlock::gpt2) {
    SB_USER_CHECK(config.ffn_hidden == 0 && config.kv_heads == 0,
                  "gpt config '{}': ffn_hidden and kv_heads describe Llama-style blocks; a GPT-2 block has an MLP "
                  "of 4·channels and as many key/value heads as heads", config.name);
    return;
  }
  SB_USER_CHECK(config.ffn_hidden > 0, "gpt config '{}': ffn_hidden must be positive, got {}", config.name,
                config.ffn_hidden);
  SB_USER_CHECK(config.kv_heads > 0 && config.heads % config.kv_heads == 0,
                "gpt config '{}': kv_heads ({}) must be positive and divide heads ({})", config.name,
                config.kv_heads, config.heads);
}

bool gpt_llama_style(const GptConfig& config) { return config.block != GptBlock::gpt2; }

std::int64_t gpt_mlp_width(const GptConfig& config) {
  return gpt_llama_style(config) ? config.ffn_hidden : 4 * config.channels;
}

std::int64_t gpt_mlp_matrices(const GptConfig& config) { return config.block == GptBlock::llama ? 3 : 2; }

std::int64_t gpt_kv_heads(const GptConfig& config) {
  return gpt_llama_style(config) ? config.kv_heads : config.heads;
}

std::int64_t gpt_embedding_parameter_count(const GptConfig& config) {
  if (gpt_llama_style(config)) return config.vocab * config.channels;
  return (config.vocab + config.max_seq_len) * config.channels;
}

std::int64_t gpt_block_parameter_count(const GptConfig& config) {
  const std::int64_t C = config.channels;
  if (config.block == GptBlock::gpt2) return 12 * C * C + 13 * C;
  const std::int64_t K = gpt_kv_heads(config) * (C / config.heads), F = gpt_mlp_width(config);
  const std::int64_t norms = config.block == GptBlock::llama ? 2 * C : 4 * C;  // RMSNorm C, LayerNorm 2C
  return 2 * C * C + 2 * C * K + gpt_mlp_matrices(config) * C * F + norms;
}

std::int64_t gpt_final_layernorm_parameter_count(const GptConfig& config) {
  return config.block == GptBlock::llama ? config.channels : 2 * config.channels;
}

std::int64_t gpt_head_parameter_count(const GptConfig& config) {
  return gpt_llama_style(config) ? config.vocab * config.channels : 0;
}

std::int64_t gpt_parameter_count(const GptConfig& config) {
  return gpt_embedding_parameter_count(config) + config.layers * gpt_block_parameter_count(config) +
         gpt_final_layernorm_parameter_count(config) + gpt_head_parameter_count(config);
}

}  // namespace sb::gpt
