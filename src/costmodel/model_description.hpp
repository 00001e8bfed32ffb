// SPDX-License-Identifier: Apache-2.0
// The cost model's view of a network: its pipeline units (GPT: embedding, blocks, head;
// ResNet: stem, blocks, head), each a list of layers with shapes, forward FLOPs, parameters and
// the activation bytes kept for the backward, for one micro-batch. Built from the trainer's own
// shape and FLOP sources (models/gpt/gpt_config.hpp, gpt_flops.hpp, models/resnet/
// resnet_config.hpp, resnet_partition.hpp). Leaves out strategies: tp, pp, ZeRO and
// recomputation are applied by step_prediction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/closed_forms.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"

namespace sb::costmodel {

enum class ModelFamily { gpt, resnet };

struct LayerCost {
  std::string name;             // "block.3", "stage2.0.conv1"
  std::string shape;            // "in (b,s,C) = (1,2048,12288)"
  double forward_flops = 0;     // one micro-batch, a multiply-add counted as 2
  double parameters = 0;        // elements
  double weight_bytes = 0;      // parameters × the description's element bytes
  double activation_bytes = 0;  // kept for the backward, one micro-batch, no parallelism
  double buffers = 0;           // fp32 model state beside the parameters (BatchNorm running mean, variance)
};

struct UnitCost {
  std::string name;  // a pipeline unit: "embedding", "block.0", "head"; "stem", "stage1.0", "head"
  std::vector<LayerCost> layers;
  double output_bytes = 0;  // what the unit hands to the next stage for one micro-batch
  double forward_flops() const;
  double parameters() const;
  double activation_bytes() const;
};

struct ModelDescription {
  ModelFamily family = ModelFamily::gpt;
  std::string name;
  std::int64_t micro_batch = 0;  // b: sequences or images per micro-batch
  std::int64_t seq_len = 1;      // s (GPT); 1 for images
  double element_bytes = 4;      // activations and weights as stored: 4 (fp32) or 2 (fp16, bf16)
  gpt::GptConfig gpt;            // family gpt
  resnet::ResnetConfig resnet;   // family resnet
  std::vector<UnitCost> units;  // in execution order; every layer's weight_bytes filled in

  double parameters() const;
  double forward_flops() const;
  // Forward + backward = 3 × forward (gpt_training_flops, resnet_training_flops).
  double training_flops() const { return 3.0 * forward_flops(); }
  double weight_bytes() const { return parameters() * element_bytes; }
};

// The terms of Korthikanti et al.'s activation count (closed_forms.hpp) for the config's block:
//   gpt2      GPT-3's: dropout (its masks kept), every head its own K and V, the MLP's GELU input
//             and output (2·4C each): 16.
//   llama     no dropout (Meta's reference model, meta-llama/llama3 llama/model.py, has no
//             dropout layer), K and V of kv_heads, the gated MLP as Megatron-LM's fused SwiGLU
//             keeps it: its input, gate and up side by side (4F/C), and its output (2F/C).
//   nemotron  no dropout ("dropout rate of zero": Parmar et al. 2024, Nemotron-4 15B, §2), K and V
//             of kv_heads, the squared ReLU's input and output (2F/C each).
BlockActivationTerms gpt_block_activation_terms(const gpt::GptConfig& config);

// GPT with micro-batch b and sequence s <= max_seq_len. Block activations are Korthikanti et al.
// 2022's count for the block (gpt_block_activation_terms; GPT-2's: sbh(34 + 5as/h)) for 16-bit
// activations, scaled by element_bytes / 2; the head keeps its fp32 logits (b·s·V·4 bytes) for
// the cross-entropy. Parameters and FLOPs are exact for every block kind (gpt_config.hpp,
// gpt_flops.hpp).
ModelDescription describe_gpt(const gpt::GptConfig& config, std::int64_t micro_batch,
                              std::int64_t seq_len, double element_bytes);
// ResNet with micro-batch b images: resnet_layers, grouped into resnet_pipeline_units; each
// layer keeps its output (N·OC·OH·OW elements) for the backward.
ModelDescription describe_resnet(const resnet::ResnetConfig& config, std::int64_t micro_batch,
                                 double element_bytes);

}  // namespace sb::costmodel
