// SPDX-License-Identifier: Apache-2.0
// The model descriptions against the trainer's own counts (parameter counts, FLOPs) and the
// published sizes of the spec-only models, GPT-2 and Llama-style. Leaves out strategies
// (test_step_prediction.cpp).
#include <gtest/gtest.h>

#include <tuple>

#include "core/check.hpp"
#include "costmodel/closed_forms.hpp"
#include "costmodel/gemm_model.hpp"
#include "costmodel/model_description.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "models/resnet/resnet_flops.hpp"

namespace sb::costmodel {
namespace {

TEST(ModelDescription, GptSumsToTheTrainersCounts) {
  for (const char* name : {"gpt-nano", "gpt-tiny", "gpt2-124m", "gpt-1.3b", "gpt-175b", "gpt-1t", "llama3-8b",
                           "llama3-405b"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    const ModelDescription d = describe_gpt(g, 2, g.max_seq_len, 2);
    EXPECT_EQ(d.parameters(), static_cast<double>(gpt::gpt_parameter_count(g))) << name;
    EXPECT_NEAR(d.forward_flops() / gpt::gpt_forward_flops(g, 2, g.max_seq_len), 1.0, 1e-12) << name;
    EXPECT_NEAR(d.training_flops() / gpt::gpt_training_flops(g, 2, g.max_seq_len), 1.0, 1e-12) << name;
    ASSERT_EQ(d.units.size(), static_cast<std::size_t>(g.layers + 2)) << name;  // embedding, blocks, head
    EXPECT_EQ(d.units.front().name, "embedding");
    EXPECT_EQ(d.units.back().name, "head");
  }
}

TEST(ModelDescription, GptBlockActivationsAreKorthikantisFormula) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-175b");
  const ModelDescription half = describe_gpt(g, 1, 2048, 2);
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(half.units[1].activation_bytes(), sbh * (34 + 5.0 * 96 * 2048 / 12288));
  EXPECT_DOUBLE_EQ(half.units[1].layers[0].weight_bytes, 2.0 * (12.0 * 12288 * 12288 + 13 * 12288));
  // fp32 activations: twice the 16-bit bytes
  EXPECT_DOUBLE_EQ(describe_gpt(g, 1, 2048, 4).units[1].activation_bytes(), 2 * half.units[1].activation_bytes());
  // the head keeps fp32 logits (b, s, V)
  EXPECT_DOUBLE_EQ(half.units.back().activation_bytes(), 2048.0 * 51200 * 4);
}

TEST(ModelDescription, SpecOnlyGptSizesMatchTheirNames) {
  const std::pair<const char*, double> sizes[] = {{"gpt-1.3b", 1.3e9}, {"gpt-6.7b", 6.7e9},
                                                  {"gpt-13b", 13e9},   {"gpt-175b", 175e9},
                                                  {"gpt-530b", 530e9}, {"gpt-1t", 1.0e12}};
  for (const auto& [name, params] : sizes) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    EXPECT_TRUE(g.spec_only) << name;
    EXPECT_EQ(g.max_seq_len, 2048);
    EXPECT_EQ(g.vocab, 51200);
    EXPECT_NEAR(static_cast<double>(gpt::gpt_parameter_count(g)) / params, 1.0, 0.035) << name;
  }
  EXPECT_FALSE(gpt::gpt_config_by_name("gpt-tiny").spec_only);
}

// Meta's published sizes (Llama 3 model cards: 8B, 70B, 405B; the Hugging Face checkpoints
// meta-llama/Llama-3.1-8B, -70B and -405B report 8,030,261,248, 70,553,706,496 and
// 405,853,388,800 parameters) and the Llama 3 paper's shapes (Table 3).
TEST(ModelDescription, Llama3SizesAndShapes) {
  const std::tuple<const char*, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t> sizes[] = {
      {"llama3-8b", 8.03e9, 32, 4096, 14336, 32},
      {"llama3-70b", 70.6e9, 80, 8192, 28672, 64},
      {"llama3-405b", 405.9e9, 126, 16384, 53248, 128}};
  for (const auto& [name, params, layers, hidden, ffn, heads] : sizes) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    EXPECT_TRUE(g.spec_only) << name;
    EXPECT_EQ(g.block, gpt::GptBlock::llama) << name;
    EXPECT_EQ(g.layers, layers) << name;
    EXPECT_EQ(g.channels, hidden) << name;
    EXPECT_EQ(g.ffn_hidden, ffn) << name;
    EXPECT_EQ(g.heads, heads) << name;
    EXPECT_EQ(g.kv_heads, 8) << name;
    EXPECT_EQ(g.vocab, 128256) << name;
    EXPECT_NEAR(static_cast<double>(gpt::gpt_parameter_count(g)) / params, 1.0, 0.005) << name;
  }
  // to the parameter: embedding 128256·4096, 32 blocks of 2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096,
  // the final RMSNorm 4096 and the untied head 128256·4096
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("llama3-8b")), 8030261248);
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("llama3-70b")), 70553706496);
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("llama3-405b")), 405853388800);
}

// Each block kind's activation terms: GPT-2's are Korthikanti et al.'s GPT-3 count; Llama's and
// Nemotron's keep no dropout mask, K and V of their key/value heads and their own MLP's tensors.
TEST(ModelDescription, BlockActivationTermsFollowTheBlockKind) {
  EXPECT_EQ(gpt_block_activation_terms(gpt::gpt_config_by_name("gpt-175b")), BlockActivationTerms{});
  EXPECT_EQ(gpt_block_activation_terms(gpt::gpt_config_by_name("gpt2-124m")), BlockActivationTerms{});
  const BlockActivationTerms llama = gpt_block_activation_terms(gpt::gpt_config_by_name("llama3-405b"));
  EXPECT_EQ(llama, (BlockActivationTerms{8.0, 2 + 4.0 * 8 / 128 + 2 + 6.0 * 53248 / 16384, 2.0}));
  EXPECT_DOUBLE_EQ(llama.replicated + llama.tensor_parallel, 31.75);  // GPT-3's 34 less 2 masks, K/V and MLP
  // Nemotron-4 15B: 8 key/value heads of 48, the squared ReLU's input and output of 24576 = 4C
  EXPECT_EQ(gpt_block_activation_terms(gpt::gpt_config_by_name("nemotron4-15b")),
            (BlockActivationTerms{8.0, 2 + 4.0 * 8 / 48 + 2 + 16.0, 2.0}));
  // the description's blocks keep them: 16-bit, t = 1, unfused attention
  const gpt::GptConfig g = gpt::gpt_config_by_name("llama3-8b");
  const ModelDescription d = describe_gpt(g, 2, 1024, 2.0);
  const double sbh = 1024.0 * 2 * 4096;
  EXPECT_DOUBLE_EQ(d.units[1].activation_bytes(), sbh * (8 + 2 + 4.0 * 8 / 32 + 2 + 6 * 3.5 + 2.0 * 32 * 1024 / 4096));
}

// Llama 2's shapes (Touvron et al. 2023, Table 1, and Meta's config.json) and the sizes its
// name rounds (7B, 13B, 70B): to the parameter, embedding 32000·4096, 32 blocks of 4·4096² +
// 3·4096·11008 + 2·4096, the final RMSNorm 4096 and the untied head 32000·4096; the 70B's
// grouped-query attention (8 key/value heads of 128) makes its K and V projections 8192×1024.
TEST(ModelDescription, Llama2SizesAndShapes) {
  const std::tuple<const char*, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>
      sizes[] = {{"llama2-7b", 6.7e9, 32, 4096, 11008, 32, 32},
                 {"llama2-13b", 13.0e9, 40, 5120, 13824, 40, 40},
                 {"llama2-70b", 69.0e9, 80, 8192, 28672, 64, 8}};
  for (const auto& [name, params, layers, hidden, ffn, heads, kv_heads] : sizes) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    EXPECT_TRUE(g.spec_only) << name;
    EXPECT_EQ(g.block, gpt::GptBlock::llama) << name;
    EXPECT_EQ(std::tie(g.layers, g.channels, g.ffn_hidden, g.heads, g.kv_heads),
              std::tie(layers, hidden, ffn, heads, kv_heads)) << name;
    EXPECT_EQ(g.vocab, 32000) << name;
    EXPECT_EQ(g.max_seq_len, 4096) << name;
    EXPECT_NEAR(static_cast<double>(gpt::gpt_parameter_count(g)) / params, 1.0, 0.01) << name;
  }
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("llama2-7b")),
            2 * 32000 * 4096 + 32 * (4LL * 4096 * 4096 + 3LL * 4096 * 11008 + 2 * 4096) + 4096);
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("llama2-70b")),
            2 * 32000 * 8192 + 80 * (2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672 + 2 * 8192) + 8192);
}

// Llama 3.1 is Llama 3 with a 128K context: the same shapes and parameters, sequences up to
// 131,072 (rotary positions, so the context adds no parameter).
TEST(ModelDescription, Llama31IsLlama3WithALongerContext) {
  for (const auto& [three, three_one] : {std::pair{"llama3-8b", "llama3.1-8b"}, std::pair{"llama3-70b", "llama3.1-70b"},
                                         std::pair{"llama3-405b", "llama3.1-405b"}}) {
    const gpt::GptConfig a = gpt::gpt_config_by_name(three), b = gpt::gpt_config_by_name(three_one);
    EXPECT_EQ(a.max_seq_len, 8192) << three;
    EXPECT_EQ(b.max_seq_len, 131072) << three_one;
    EXPECT_EQ(gpt::gpt_parameter_count(a), gpt::gpt_parameter_count(b)) << three_one;
    EXPECT_EQ(std::tie(a.layers, a.channels, a.heads, a.kv_heads, a.ffn_hidden, a.vocab),
              std::tie(b.layers, b.channels, b.heads, b.kv_heads, b.ffn_hidden, b.vocab)) << three_one;
    EXPECT_EQ(b.block, gpt::GptBlock::llama);
  }
}

// Forward FLOPs written out for a Llama block: Q and output 2·(2·BT·C²), K and V 2·(2·BT·C·K),
// gate, up and down 3·(2·BT·C·F), attention core 4·B·T²·C; the head 2·BT·C·V.
TEST(ModelDescription, Llama3FlopsAreItsGemms) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("llama3-70b");
  const double B = 2, T = 8192, C = 8192, K = 8 * 128, F = 28672, V = 128256, L = 80;
  const double block = 2 * B * T * (2 * C * C + 2 * C * K + 3 * C * F) + 4 * B * T * T * C;
  const ModelDescription d = describe_gpt(g, 2, 8192, 2);
  EXPECT_NEAR(d.forward_flops() / (L * block + 2 * B * T * C * V), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.units.back().parameters(), V * C + C);  // untied head and the final RMSNorm
  EXPECT_DOUBLE_EQ(d.units.front().parameters(), V * C);     // no position embedding
}

// Nemotron-4's shapes (15B: Parmar et al. 2024, arXiv:2402.16819, §2 and Table 1; 340B: Adler
// et al. 2024, arXiv:2406.11704, §2.2, whose 9.4B embedding and 331.6B non-embedding parameters
// the 340B's count must round to): an MLP of two matrices (up, squared ReLU, down), not gated,
// and LayerNorms of a weight and a bias; to the parameter, 15B's embedding 256000·6144, 32
// blocks of 2·6144² + 2·6144·1024 + 2·6144·24576 + 4·6144, the final LayerNorm 2·6144 and the
// untied head 256000·6144: 15.63 billion.
TEST(ModelDescription, Nemotron4SizesAndShapes) {
  for (const auto& [name, layers, hidden, heads] :
       {std::tuple{"nemotron4-15b", 32, 6144, 48}, std::tuple{"nemotron4-340b", 96, 18432, 96}}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    EXPECT_TRUE(g.spec_only) << name;
    EXPECT_EQ(g.block, gpt::GptBlock::nemotron) << name;
    EXPECT_EQ(g.layers, layers) << name;
    EXPECT_EQ(g.channels, hidden) << name;
    EXPECT_EQ(g.heads, heads) << name;
    EXPECT_EQ(g.kv_heads, 8) << name;
    EXPECT_EQ(g.ffn_hidden, 4 * g.channels) << name;
    EXPECT_EQ(g.vocab, 256000) << name;
    EXPECT_EQ(g.max_seq_len, 4096) << name;
    EXPECT_EQ(gpt::gpt_mlp_matrices(g), 2) << name;
  }
  EXPECT_EQ(gpt::gpt_parameter_count(gpt::gpt_config_by_name("nemotron4-15b")),
            2LL * 256000 * 6144 + 32 * (2LL * 6144 * 6144 + 2LL * 6144 * 1024 + 2LL * 6144 * 24576 + 4 * 6144) +
                2 * 6144);
  const gpt::GptConfig big = gpt::gpt_config_by_name("nemotron4-340b");
  const double embeddings =
      static_cast<double>(gpt::gpt_embedding_parameter_count(big) + gpt::gpt_head_parameter_count(big));
  EXPECT_NEAR(embeddings / 1e9, 9.4, 0.05);
  EXPECT_NEAR((static_cast<double>(gpt::gpt_parameter_count(big)) - embeddings) / 1e9, 331.6, 0.05);
}

// Forward FLOPs written out for a Nemotron-4 block: Q and output 2·(2·BT·C²), K and V
// 2·(2·BT·C·K), up and down 2·(2·BT·C·F), attention core 4·B·T²·C; the head 2·BT·C·V; and the
// GEMM model's shapes of the block are the same GEMMs.
TEST(ModelDescription, Nemotron4FlopsAreItsGemms) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("nemotron4-15b");
  const double B = 4, T = 4096, C = 6144, K = 8 * 128, F = 24576, V = 256000, L = 32;
  const double linear = 2 * B * T * (2 * C * C + 2 * C * K + 2 * C * F);
  const ModelDescription d = describe_gpt(g, 4, 4096, 2);
  EXPECT_NEAR(d.forward_flops() / (L * (linear + 4 * B * T * T * C) + 2 * B * T * C * V), 1.0, 1e-12);
  double gemm_flops = 0;
  for (const GemmShape& s : gpt_block_linear_gemms(g, 4, 4096, 1)) gemm_flops += s.flops();
  EXPECT_NEAR(gemm_flops / linear, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.units.back().parameters(), V * C + 2 * C);  // untied head and the final LayerNorm
}

TEST(ModelDescription, TheTrainerRefusesLlamaBlocks) {
  for (const char* name : {"llama3-8b", "nemotron4-15b"}) {
    gpt::GptConfig g = gpt::gpt_config_by_name(name);
    g.spec_only = false;  // even were it not marked spec only
    try {
      gpt::resolve_gpt_partition(g, gpt::GptPartition{});
      FAIL() << "a Llama-style model was accepted by the trainer: " << name;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("Llama-style blocks"), std::string::npos) << e.what();
    }
  }
}

TEST(ModelDescription, TheTrainerRefusesSpecOnlyGpt) {
  try {
    gpt::resolve_gpt_partition(gpt::gpt_config_by_name("gpt-175b"), gpt::GptPartition{});
    FAIL() << "a spec-only size was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("spec only"), std::string::npos) << e.what();
  }
}

TEST(ModelDescription, Resnet50MatchesTorchvision) {
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-50");
  const ModelDescription d = describe_resnet(r, 32, 2);
  EXPECT_EQ(d.parameters(), 25557032.0);  // torchvision's resnet50
  // torchvision: 4.09 GMACs per 224² image = 2 × 4,089,184,256 FLOPs
  EXPECT_DOUBLE_EQ(d.forward_flops(), 32 * 2.0 * 4089184256.0);
  EXPECT_DOUBLE_EQ(d.training_flops(), resnet::resnet_training_flops(r, 32));
  // stem, 3 + 4 + 6 + 3 bottleneck blocks, head
  ASSERT_EQ(d.units.size(), 18u);
  EXPECT_EQ(d.units[1].name, "stage1.0");
  // the stem hands on 64 × 56 × 56 per image (after the max pool)
  EXPECT_DOUBLE_EQ(d.units[0].output_bytes, 32.0 * 64 * 56 * 56 * 2);
  // each layer keeps its output: the stem conv's is 64 × 112 × 112 per image
  EXPECT_EQ(d.units[0].layers[0].name, "stem.conv");
  EXPECT_DOUBLE_EQ(d.units[0].layers[0].activation_bytes, 32.0 * 64 * 112 * 112 * 2);
  // BatchNorm running mean and variance: 2 × (64 + 1408 + 3584 + 10240 + 11264) channels (stem;
  // per stage blocks × (w + w + 4w) + the downsample's 4w), torchvision's running_* buffers
  double buffers = 0;
  for (const UnitCost& u : d.units)
    for (const LayerCost& l : u.layers) buffers += l.buffers;
  EXPECT_EQ(buffers, 53120.0);
}

}  // namespace
}  // namespace sb::costmodel
