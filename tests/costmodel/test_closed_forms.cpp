// SPDX-License-Identifier: Apache-2.0
// The closed forms against the papers' own numbers and against the model sources the trainer
// uses (gpt_flops.hpp). Leaves out predict (test_step_prediction.cpp).
#include <gtest/gtest.h>

#include "costmodel/closed_forms.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/gpt/gpt_flops.hpp"

namespace sb::costmodel {
namespace {

constexpr double GB = 1e9;

TEST(ClosedForms, MegatronFlopsEqualTheTrainersGptFlops) {
  // gpt_training_flops (the trainer's MFU) and Narayanan eq. 2 are the same count.
  for (const char* name : {"gpt-tiny", "gpt2-124m", "gpt-175b"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    const double ours = gpt::gpt_training_flops(g, 8, g.max_seq_len);
    const double megatron = megatron_training_flops(8, static_cast<double>(g.max_seq_len),
                                                    static_cast<double>(g.layers),
                                                    static_cast<double>(g.channels),
                                                    static_cast<double>(g.vocab));
    EXPECT_NEAR(ours / megatron, 1.0, 1e-12) << name;
  }
}

TEST(ClosedForms, SixNPlusAttentionPerTokenIsEquationTwo) {
  const double l = 96, h = 12288, s = 2048, V = 51200, B = 1536;
  const double gemm_parameters = 12 * l * h * h + V * h;
  EXPECT_NEAR(training_flops_per_token(gemm_parameters, l, s, h) * B * s /
                  megatron_training_flops(B, s, l, h, V), 1.0, 1e-12);
  // with every parameter (biases, LayerNorms, position embedding) the rule is within 0.1%
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-175b");
  const double all = static_cast<double>(gpt::gpt_parameter_count(g));
  EXPECT_NEAR(training_flops_per_token(all, l, s, h) * B * s / megatron_training_flops(B, s, l, h, V),
              1.0, 1e-3);
  // attention adds 12·l·s·h = 2.9e10 FLOPs per token to 6N = 1.05e12 for GPT-3 175B: 2.8%
  EXPECT_NEAR(12 * l * s * h / (6 * all), 0.0277, 0.0005);
}

TEST(ClosedForms, FullRecomputeAddsOneForwardOfTheBlocks) {
  const double B = 4, s = 2048, l = 24, h = 2048, V = 51200;
  const double forward_blocks = 24 * B * s * l * h * h * (1 + s / (6 * h));
  EXPECT_NEAR(megatron_training_flops_full_recompute(B, s, l, h, V),
              megatron_training_flops(B, s, l, h, V) + forward_blocks, 1e-6 * forward_blocks);
  // the 96·(...) form of Narayanan eq. 3 is 4/3 of eq. 2 when the head is negligible
  EXPECT_NEAR(megatron_training_flops_full_recompute(B, s, l, h, 0) / megatron_training_flops(B, s, l, h, 0),
              4.0 / 3.0, 1e-12);
}

TEST(ClosedForms, KorthikantiActivationMemory) {
  // GPT-3 175B layer, s 2048, b 1, h 12288, a 96 (Korthikanti et al. 2022 §4)
  const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::none), sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, false, Recompute::none),
                   sbh * (10 + 24.0 / 8 + 5 * a * s / (h * 8)));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::none), sbh / 8 * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::selective), 34 * sbh / 8);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, false, Recompute::selective), sbh * (10 + 24.0 / 8));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, false, Recompute::full), 2 * sbh);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::full), 2 * sbh / 8);
  // the paper's headline: at t = 8 with sequence parallelism, selective recomputation keeps
  // 34/(34 + 5as/h) of the no-recompute memory: 34 / 114 = 30% (a 70% reduction)
  EXPECT_NEAR(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::selective) /
                  activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::none), 34.0 / 114.0, 1e-12);
}

// The count by where each kept tensor sits gives back the paper's GPT-3 terms, and counts a
// block without dropout, with grouped-query attention or another MLP tensor by tensor.
TEST(ClosedForms, BlockActivationTermsCountEachKeptTensor) {
  EXPECT_EQ(block_activation_terms(1.0, 16.0, true), BlockActivationTerms{});  // GPT-3: 10, 24, 5
  // Llama 3 70B: 8 key/value heads of 64, the fused SwiGLU keeping 3 tensors of 28672 = 3.5h
  const BlockActivationTerms llama = block_activation_terms(8.0 / 64.0, 3 * 2 * 3.5, false);
  EXPECT_DOUBLE_EQ(llama.replicated, 4 + 2 + 2);                  // norms' inputs, QKV's and MLP's inputs
  EXPECT_DOUBLE_EQ(llama.tensor_parallel, 2 + 4 * 0.125 + 2 + 21);  // Q, K and V, projection input, MLP
  EXPECT_DOUBLE_EQ(llama.scores, 2);                              // the softmax's output, no dropout
  const double s = 8192, b = 1, h = 8192, a = 64, sbh = s * b * h;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::none, true, llama), sbh / 8 * 33.5);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, false, Recompute::selective, false, llama),
                   sbh * (8 + 25.5 / 8));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, false, Recompute::none, false, llama),
                   sbh * (8 + 25.5 / 8 + 2 * a * s / (h * 8)));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 8, true, Recompute::full, true, llama), 2 * sbh / 8);
  EXPECT_THROW(block_activation_terms(0.0, 16.0, true), sb::Error);
}

TEST(ClosedForms, ZeroPaperSevenAndAHalfBillionOnSixtyFourGpus) {
  // Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, Nd = 64, K = 12 -> 120, 31.4, 16.6, 1.9 GB
  const double psi = 7.5e9;
  const double paper[4] = {120.0, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    const double gb = zero_model_state_bytes(psi, 64, stage).total() / GB;
    EXPECT_NEAR(gb / paper[stage], 1.0, 0.02) << "stage " << stage << ": " << gb << " GB";
  }
  const ModelStateBytes s2 = zero_model_state_bytes(psi, 64, 2);
  EXPECT_DOUBLE_EQ(s2.params, 2 * psi);
  EXPECT_DOUBLE_EQ(s2.grads, 2 * psi / 64);
  EXPECT_DOUBLE_EQ(s2.optimizer, 12 * psi / 64);
  // one rank: every stage holds everything
  EXPECT_DOUBLE_EQ(zero_model_state_bytes(psi, 1, 3).total(), 16 * psi);
}

TEST(ClosedForms, PipelineBubble) {
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 1), 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 8), 3.0 / 11.0);
  // interleaving v virtual stages divides the idle part by v (Narayanan et al. §2.2.2)
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 8, 3), 1.0 / 9.0);
}

TEST(ClosedForms, RingCollectivesAndPointToPoint) {
  const LinkCost link{100e9, 5e-6};
  const double S = 1e9;
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(S, 1, link), 0.0);
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(S, 8, link), 2.0 * 7 / 8 * S / 100e9 + 2.0 * 7 * 5e-6);
  EXPECT_DOUBLE_EQ(ring_reduce_scatter_seconds(S, 8, link), 7.0 / 8 * S / 100e9 + 7 * 5e-6);
  EXPECT_DOUBLE_EQ(ring_all_gather_seconds(S, 8, link), ring_reduce_scatter_seconds(S, 8, link));
  // an all-reduce is a reduce-scatter followed by an all-gather
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(S, 8, link),
                   ring_reduce_scatter_seconds(S, 8, link) + ring_all_gather_seconds(S, 8, link));
  EXPECT_DOUBLE_EQ(p2p_seconds(S, link), 5e-6 + S / 100e9);
}

// The α-β-γ model: the reduce-scatter (and so the all-reduce) adds (n−1)/n · S·γ for the bytes a
// rank reduces; the all-gather reduces nothing.
TEST(ClosedForms, RingReductionsAddTheirReducedBytesAtGamma) {
  const LinkCost moves{100e9, 5e-6}, reducing{100e9, 5e-6, 0.2e-9};
  const double S = 1e9;
  EXPECT_DOUBLE_EQ(ring_reduce_scatter_seconds(S, 8, reducing), ring_reduce_scatter_seconds(S, 8, moves) + 7.0 / 8 * S * 0.2e-9);
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(S, 8, reducing), ring_all_reduce_seconds(S, 8, moves) + 7.0 / 8 * S * 0.2e-9);
  EXPECT_DOUBLE_EQ(ring_all_gather_seconds(S, 8, reducing), ring_all_gather_seconds(S, 8, moves));
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(S, 1, reducing), 0.0);
}

}  // namespace
}  // namespace sb::costmodel
