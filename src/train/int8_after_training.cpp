// SPDX-License-Identifier: Apache-2.0
// int8 post-training quantisation at the end of a run (see int8_after_training.hpp).
#include "train/int8_after_training.hpp"

#include <fmt/format.h>

#include <string>

namespace sb::train {

io::Attributes compression_attributes(const compress::QuantizationReport& r, std::int64_t calibration_batches,
                                      bool text) {
  const std::string metric = text ? "heldout_loss" : "accuracy";
  io::Attributes attrs{{"quantize", std::string("int8")},
                       {"calibration_batches", calibration_batches},
                       {"weight_bytes_fp32", r.weight_bytes_fp32},
                       {"weight_bytes_int8", r.weight_bytes_int8},
                       {"weight_bytes_ratio", static_cast<double>(r.weight_bytes_fp32) /
                                                  static_cast<double>(r.weight_bytes_int8)},
                       {"params_bytes_int8_in_memory", r.int8_params_in_memory},
                       {metric + "_fp32", r.fp32_metric},
                       {metric + "_int8", r.int8_metric},
                       {"samples_per_s_fp32", r.fp32_samples_per_s},
                       {"samples_per_s_int8", r.int8_samples_per_s}};
  if (text) {
    attrs.emplace_back("tokens_per_s_fp32", r.fp32_tokens_per_s);
    attrs.emplace_back("tokens_per_s_int8", r.int8_tokens_per_s);
  }
  return attrs;
}

std::optional<compress::QuantizationReport> quantize_int8_if_asked(const plan::TrainConfig& c, TrainingTask& task,
                                                                   RunRecord& record, ProgressLine& progress) {
  if (c.compress.quantize != "int8" || !record.root()) return std::nullopt;
  const bool text = task.tokens_per_step() > 0;
  const compress::QuantizationReport q = task.quantize_int8(c.compress.calibration_batches);
  record.writer().write_compression(compression_attributes(q, c.compress.calibration_batches, text));
  progress.message(fmt::format("int8: {} {:.4f} (fp32 {:.4f}), weights {} bytes (fp32 {}: {:.2f}× smaller), "
                               "inference {:.0f} samples/s (fp32 {:.0f})",
                               text ? "held-out loss" : "test accuracy", q.int8_metric, q.fp32_metric,
                               q.weight_bytes_int8, q.weight_bytes_fp32,
                               static_cast<double>(q.weight_bytes_fp32) / static_cast<double>(q.weight_bytes_int8),
                               q.int8_samples_per_s, q.fp32_samples_per_s));
  return q;
}

}  // namespace sb::train
