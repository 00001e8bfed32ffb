// SPDX-License-Identifier: Apache-2.0
// GPT model shapes: the named configs, validation of an inline config, and the analytic
// parameter count. Leaves out the model itself (gpt.hpp) and its FLOPs (gpt_flops.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb::gpt {

struct GptConfig {
  std::string name;
  std::int64_t layers = 0;       // L, transformer blocks
  std::int64_t channels = 0;     // C, model width
  std::int64_t heads = 0;        // NH, attention heads; C % NH == 0
  std::int64_t max_seq_len = 0;  // maxT, rows of the position embedding
  std::int64_t vocab = 0;        // V, rows of the token embedding (256 for bytes)
  bool spec_only = false;        // shapes for the cost model only: the trainer refuses it
};

// gpt-nano L2 C64 H4 T64 V256; gpt-tiny L4 C256 H8 T128 V256; gpt-small L6 C384 H6 T256
// V256; gpt2-124m L12 C768 H12 T1024 V50304. Spec only (the cost model's, Megatron-LM shapes
// with T2048 V51200): gpt-1.3b, gpt-6.7b, gpt-13b, gpt-175b, gpt-530b, gpt-1t. Throws
// UserError on any other name.
GptConfig gpt_config_by_name(std::string_view name);
std::vector<std::string> gpt_config_names();

// Throws UserError naming the field at fault: every size positive, channels divisible by
// heads.
void validate_gpt_config(const GptConfig& config);

// V·C + maxT·C + L·(12C² + 13C) + 2C: embeddings, per block (QKV 3C²+3C, projection
// C²+C, MLP 8C²+5C, two LayerNorms 4C), final LayerNorm. The head is tied to wte.
std::int64_t gpt_parameter_count(const GptConfig& config);
// The terms of that sum: token and position embeddings V·C + maxT·C; one block 12C² + 13C;
// the final LayerNorm 2C.
std::int64_t gpt_embedding_parameter_count(const GptConfig& config);
std::int64_t gpt_block_parameter_count(const GptConfig& config);
std::int64_t gpt_final_layernorm_parameter_count(const GptConfig& config);

}  // namespace sb::gpt
