// SPDX-License-Identifier: Apache-2.0
// compress.quantize: int8 after the last step: rank 0 quantises its trained model, records the
// figures in /runs/<id>/compression and says them on the progress line. Leaves out the
// quantisation itself (compress/post_training_quantization.hpp, the task's quantize_int8).
#pragma once

#include <cstdint>
#include <optional>

#include "compress/post_training_quantization.hpp"
#include "io/results_file.hpp"
#include "plan/config.hpp"
#include "train/progress.hpp"
#include "train/run_record.hpp"
#include "train/training_task.hpp"

namespace sb::train {

// The compression group's attributes. The metric is the test accuracy for images and the
// held-out loss (nats/byte) for text; throughputs are evaluation forwards.
io::Attributes compression_attributes(const compress::QuantizationReport& report, std::int64_t calibration_batches,
                                      bool text);

// On rank 0 when the config asks for int8: the report, recorded; otherwise none (the other
// ranks wait in the next collective).
std::optional<compress::QuantizationReport> quantize_int8_if_asked(const plan::TrainConfig& config, TrainingTask& task,
                                                                   RunRecord& record, ProgressLine& progress);

}  // namespace sb::train
