// SPDX-License-Identifier: Apache-2.0
// Post-training int8 quantisation of a trained model, end to end: quantise its weights,
// calibrate the activation ranges on the batches given, and measure the fp32 model against the
// int8 one on the evaluation data — accuracy (resnet-mini) or mean loss (GPT), inference
// throughput on this thread count, and weight bytes as stored and in memory. What `scalebench
// train` runs when the config asks for compress.quantize: int8, and what the tests check.
// Leaves out choosing the data (the caller's) and writing results (train/).
#pragma once

#include <cstdint>
#include <functional>

#include "compress/image_accuracy.hpp"
#include "kernels/kernels.hpp"
#include "models/gpt/gpt.hpp"
#include "models/resnet/resnet.hpp"

namespace sb::compress {

struct QuantizationReport {
  std::int64_t weight_bytes_fp32 = 0;  // 4 · parameters
  std::int64_t weight_bytes_int8 = 0;  // as stored: int8 weights + fp32 scales, biases, fp32 rest
  std::int64_t int8_params_in_memory = 0;  // tracked params bytes of the int8 model
  double fp32_metric = 0, int8_metric = 0;  // test accuracy (images) or mean loss in nats/byte (text)
  double fp32_samples_per_s = 0, int8_samples_per_s = 0;  // evaluation forwards only (GPT: after a warm-up)
  double fp32_tokens_per_s = 0, int8_tokens_per_s = 0;    // text; 0 for images
};


// model: trained fp32 resnet, whole network, host back-end. Calibrates on the first
// calibration_batches × model.max_batch() images of `calibration`, evaluates top-1 accuracy on
// all of `test` in batches of model.max_batch(). The model's eval-mode forward is the fp32 side.
QuantizationReport quantize_resnet_int8(resnet::ResnetModel& model, const ImageSet& calibration,
                                        std::int64_t calibration_batches, const ImageSet& test);

// batch(i, tokens, targets): fills batch i, (B, T) each.
using TokenBatches = std::function<void(std::int64_t i, std::int32_t* tokens, std::int32_t* targets)>;

// model: trained fp32 GPT, whole model on one rank, host back-end. Calibrates on batches
// [0, calibration_batches) of `calibration`, evaluates the mean loss over batches
// [0, eval_batches) of `eval`; batches of (B, T) with B <= model.max_batch(), T <= its seq_len.
QuantizationReport quantize_gpt_int8(gpt::GptModel& model, const TokenBatches& calibration,
                                     std::int64_t calibration_batches, const TokenBatches& eval,
                                     std::int64_t eval_batches, std::int64_t B, std::int64_t T);

}  // namespace sb::compress
