// SPDX-License-Identifier: Apache-2.0
// Quantise, calibrate, compare (see post_training_quantization.hpp).
#include "compress/post_training_quantization.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "compress/image_accuracy.hpp"
#include "compress/quantized_gpt.hpp"
#include "compress/quantized_resnet.hpp"
#include "core/check.hpp"

namespace sb::compress {

namespace {

using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

QuantizationReport quantize_resnet_int8(resnet::ResnetModel& model, const ImageSet& calibration,
                                        i64 calibration_batches, const ImageSet& test) {
  SB_CHECK(calibration_batches >= 1 && test.count >= 1, "quantize_resnet_int8: no data");
  const i64 batch = model.max_batch(), classes = model.config().classes;
  QuantizationReport r;
  auto start = Clock::now();
  r.fp32_metric = top1_accuracy(test, batch, classes, [&](const float* x, i64 N) {
    model.forward(x, nullptr, N, false);
    return model.logits();
  });
  r.fp32_samples_per_s = static_cast<double>(test.count) / seconds_since(start);

  MemoryTracker tracker;
  QuantizedResnet int8_model(model, batch, model.backend(), tracker);
  const i64 calibration_images = std::min(calibration.count, calibration_batches * batch);
  SB_CHECK(calibration_images >= 1, "quantize_resnet_int8: no calibration images");
  for (i64 first = 0; first < calibration_images; first += batch)
    int8_model.forward(calibration.images + first * calibration.image_size,
                       std::min(batch, calibration_images - first), InferenceMode::calibrate);
  int8_model.finish_calibration();
  start = Clock::now();
  r.int8_metric = top1_accuracy(test, batch, classes, [&](const float* x, i64 N) {
    return int8_model.forward(x, N, InferenceMode::int8);
  });
  r.int8_samples_per_s = static_cast<double>(test.count) / seconds_since(start);
  r.weight_bytes_fp32 = int8_model.float_weight_bytes();
  r.weight_bytes_int8 = int8_model.weight_bytes();
  r.int8_params_in_memory = tracker.usage().of(MemoryCategory::params);
  return r;
}

QuantizationReport quantize_gpt_int8(gpt::GptModel& model, const TokenBatches& calibration,
                                     i64 calibration_batches, const TokenBatches& eval, i64 eval_batches,
                                     i64 B, i64 T) {
  SB_CHECK(calibration_batches >= 1 && eval_batches >= 1, "quantize_gpt_int8: no data");
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T)), targets(tokens.size());
  auto mean_loss = [&](auto loss_of) {
    double sum = 0;
    for (i64 b = 0; b < eval_batches; ++b) {
      eval(b, tokens.data(), targets.data());
      sum += loss_of();
    }
    return sum / static_cast<double>(eval_batches);
  };
  // Each side's throughput is timed after one untimed forward of the first evaluation batch: oneDNN
  // creates the int8 primitives on their first call, which a few evaluation batches (gpt-tiny's
  // default is 4) would otherwise count as inference time (about a tenth of it at 1 thread).
  const auto warm_up = [&](auto forward) {
    eval(0, tokens.data(), targets.data());
    forward();
  };
  QuantizationReport r;
  warm_up([&] { return model.forward(tokens.data(), targets.data(), B, T); });
  auto start = Clock::now();
  r.fp32_metric = mean_loss([&] { return model.forward(tokens.data(), targets.data(), B, T); });
  const double fp32_s = seconds_since(start);

  MemoryTracker tracker;
  QuantizedGpt int8_model(model, B, T, model.backend(), tracker);
  for (i64 b = 0; b < calibration_batches; ++b) {
    calibration(b, tokens.data(), targets.data());
    int8_model.forward(tokens.data(), targets.data(), B, T, InferenceMode::calibrate);
  }
  int8_model.finish_calibration();
  warm_up([&] { return int8_model.forward(tokens.data(), targets.data(), B, T, InferenceMode::int8); });
  start = Clock::now();
  r.int8_metric = mean_loss(
      [&] { return int8_model.forward(tokens.data(), targets.data(), B, T, InferenceMode::int8); });
  const double int8_s = seconds_since(start);
  const double sequences = static_cast<double>(eval_batches * B);
  r.fp32_samples_per_s = sequences / fp32_s;
  r.int8_samples_per_s = sequences / int8_s;
  r.fp32_tokens_per_s = sequences * static_cast<double>(T) / fp32_s;
  r.int8_tokens_per_s = sequences * static_cast<double>(T) / int8_s;
  r.weight_bytes_fp32 = int8_model.float_weight_bytes();
  r.weight_bytes_int8 = int8_model.weight_bytes();
  r.int8_params_in_memory = tracker.usage().of(MemoryCategory::params);
  return r;
}

}  // namespace sb::compress
