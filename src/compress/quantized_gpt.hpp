// SPDX-License-Identifier: Apache-2.0
// GPT for post-training int8 inference: in every block the four linear layers (QKV, attention
// projection, MLP fc and fc projection) are quantised (per-channel int8 weights, per-tensor int8
// inputs calibrated on held-out batches, int32 sums, fp32 biases). The token and position
// embeddings, the LayerNorms, attention (QK^T, causal softmax, ·V), GELU, the residual adds and
// the output head tied to wte stay fp32: the head shares its weights with the embedding, and
// attention multiplies activations by activations. Built from a trained GptModel (fp32, whole
// model, one rank), whose weights it copies. Leaves out sampling, tensor/pipeline partitions
// and the GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "compress/quantized_linear.hpp"
#include "core/memory.hpp"
#include "models/gpt/gpt.hpp"

namespace sb::compress {

class QuantizedGpt {
 public:
  // Batches up to (max_batch, max_seq_len); max_seq_len <= the model's max_seq_len.
  QuantizedGpt(gpt::GptModel& model, std::int64_t max_batch, std::int64_t max_seq_len,
               kernels::Backend backend, MemoryTracker& tracker);

  // tokens, targets (B, T) -> mean next-byte cross-entropy. calibrate: fp32 linears, recording
  // each quantised layer's input range.
  float forward(const std::int32_t* tokens, const std::int32_t* targets, std::int64_t B,
                std::int64_t T, InferenceMode mode);
  void finish_calibration();

  // As stored: the quantised linears (int8 weights, fp32 scales, biases, input scale) plus the
  // fp32 embeddings and LayerNorms.
  std::int64_t weight_bytes() const;
  // The fp32 model's: 4 · gpt_parameter_count.
  std::int64_t float_weight_bytes() const { return 4 * gpt::gpt_parameter_count(config_); }

 private:
  struct Block {
    QuantizedLinear qkv, attproj, fc, fcproj;
    const float *ln1w, *ln1b, *ln2w, *ln2b;  // (C) each, in fp32_
  };

  gpt::GptConfig config_;
  std::int64_t max_batch_, max_seq_len_;
  const kernels::KernelTable& k_;
  TrackedBuffer fp32_;  // params: wte (V, C), wpe (maxT, C), per block ln1w ln1b ln2w ln2b, lnfw lnfb
  const float *wte_ = nullptr, *wpe_ = nullptr, *lnfw_ = nullptr, *lnfb_ = nullptr;
  std::vector<Block> blocks_;
  TrackedBuffer acts_;     // activations of one forward (B, T, ...), reused by every block
  TrackedBuffer scratch_;  // workspace: the int8 input of a linear (B, T, 4C)
  float *residual_ = nullptr, *residual2_ = nullptr, *ln_ = nullptr, *mean_ = nullptr,
        *rstd_ = nullptr, *qkv_ = nullptr, *att_ = nullptr, *atty_ = nullptr, *proj_ = nullptr,
        *fch_ = nullptr, *fch_gelu_ = nullptr, *logits_ = nullptr, *probs_ = nullptr,
        *losses_ = nullptr;
  std::int8_t* input_q_ = nullptr;
};

}  // namespace sb::compress
