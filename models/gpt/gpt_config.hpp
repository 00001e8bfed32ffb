// SPDX-License-Identifier: Apache-2.0
// GPT model shapes: the named configs (GPT-2 blocks, and Llama-style blocks for the cost model),
// validation of an inline config, and the analytic parameter count. Leaves out the model itself
// (gpt.hpp) and its FLOPs (gpt_flops.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb::gpt {

// What a transformer block is made of.
//   gpt2   learned position embedding, LayerNorm with bias, biases on every linear, multi-head
//          attention, MLP C -> 4C -> C with GELU, output head tied to the token embedding: the
//          trainer's model (gpt.hpp).
//   llama  rotary positions (no position embedding), RMSNorm (a weight, no bias), no biases,
//          grouped-query attention (kv_heads key/value heads shared by heads query heads), gated
//          MLP (SwiGLU: gate and up C -> ffn_hidden, down ffn_hidden -> C, three matrices), output
//          head untied from the token embedding (Touvron et al. 2023; Llama 3: Grattafiori et al.
//          2024, "The Llama 3 Herd of Models"). Spec only: the cost model predicts it, the trainer
//          refuses it.
//   nemotron  as llama (rotary positions, no biases, grouped-query attention, untied head) but
//          LayerNorm (a weight and a bias: Megatron-Core's layernorm1p) and a plain MLP: up C ->
//          ffn_hidden, squared ReLU, down ffn_hidden -> C, two matrices (Nemotron-4: Parmar et
//          al. 2024, "Nemotron-4 15B Technical Report", arXiv:2402.16819, §2). Spec only.
enum class GptBlock { gpt2, llama, nemotron };

struct GptConfig {
  std::string name;
  std::int64_t layers = 0;       // L, transformer blocks
  std::int64_t channels = 0;     // C, model width
  std::int64_t heads = 0;        // NH, attention heads; C % NH == 0
  std::int64_t max_seq_len = 0;  // maxT, rows of the position embedding
  std::int64_t vocab = 0;        // V, rows of the token embedding (256 for bytes)
  bool spec_only = false;        // shapes for the cost model only: the trainer refuses it
  GptBlock block = GptBlock::gpt2;
  std::int64_t ffn_hidden = 0;   // llama, nemotron: F, the MLP's width; gpt2: 0 (the MLP is 4C)
  std::int64_t kv_heads = 0;     // llama, nemotron: key/value heads, dividing heads; gpt2: 0 (as many as heads)
};

// Llama-style (llama, nemotron): rotary positions, grouped-query attention, no biases, an
// output head of its own; otherwise GPT-2's.
bool gpt_llama_style(const GptConfig& config);
// The MLP's inner width: ffn_hidden (llama-style) or 4C (gpt2).
std::int64_t gpt_mlp_width(const GptConfig& config);
// The MLP's C x F matrices: 3 when gated (llama: gate, up, down), 2 otherwise (up, down).
std::int64_t gpt_mlp_matrices(const GptConfig& config);
// Key/value heads: kv_heads (llama-style) or heads (gpt2).
std::int64_t gpt_kv_heads(const GptConfig& config);

// gpt-nano L2 C64 H4 T64 V256; gpt-tiny L4 C256 H8 T128 V256; gpt-small L6 C384 H6 T256
// V256; gpt2-124m L12 C768 H12 T1024 V50304. Spec only (the cost model's, Megatron-LM shapes
// with T2048 V51200): gpt-1.3b, gpt-6.7b, gpt-13b, gpt-175b, gpt-530b, gpt-1t; Llama-style,
// T8192 V128256: llama3-8b, llama3-70b, llama3-405b (and llama3.1, llama2); Nemotron-4, T4096
// V256000: nemotron4-15b, nemotron4-340b. Throws UserError on any other name.
GptConfig gpt_config_by_name(std::string_view name);
std::vector<std::string> gpt_config_names();

// Throws UserError naming the field at fault: every size positive, channels divisible by
// heads; llama-style: ffn_hidden positive, kv_heads positive and dividing heads; gpt2: neither set.
void validate_gpt_config(const GptConfig& config);

// gpt2: V·C + maxT·C + L·(12C² + 13C) + 2C: embeddings, per block (QKV 3C²+3C, projection
// C²+C, MLP 8C²+5C, two LayerNorms 4C), final LayerNorm; the head is tied to wte.
// llama (head dimension d = C / heads, K = kv_heads·d): V·C + L·(2C² + 2CK + 3CF + 2C) + C + V·C:
// the token embedding, per block (Q and output projections 2C², K and V 2CK, gate, up and down
// 3CF, two RMSNorms 2C), the final RMSNorm and the untied output head.
// nemotron: V·C + L·(2C² + 2CK + 2CF + 4C) + 2C + V·C: up and down 2CF, LayerNorms of 2C each.
std::int64_t gpt_parameter_count(const GptConfig& config);
// The terms of that sum: the input embeddings (V·C + maxT·C; llama V·C); one block; the final
// norm (2C; llama C); the head's own weights (0 when tied; llama-style V·C).
std::int64_t gpt_embedding_parameter_count(const GptConfig& config);
std::int64_t gpt_block_parameter_count(const GptConfig& config);
std::int64_t gpt_final_layernorm_parameter_count(const GptConfig& config);
std::int64_t gpt_head_parameter_count(const GptConfig& config);

}  // namespace sb::gpt
