// Whether a dp×tp×pp grid fits the model and the batch it is asked to train, checked before any
// work (no data loaded, no MPI needed): every reason a grid cannot work is one UserError
// sentence naming the key at fault. Leaves out the world size (the trainer compares it with
// the MPI world) and what the grid does at run time (process_grid.hpp, the strategies).
#pragma once

#include "train/config.hpp"

namespace sb::train {

// tp divides the GPT's heads and its MLP width and splits no ResNet; pp is at most the number
// of layers a stage can hold (GPT blocks; ResNet stem, blocks and head); with pp > 1 the
// micro-batches fill the pipeline; zero, recompute and interleave are what the trainer runs.
void check_model_parallel_grid(const TrainConfig& config);

// Units a pipeline stage is built from: GPT blocks, or the ResNet's stem, blocks and head.
std::int64_t pipeline_units_of(const TrainConfig& config);

}  // namespace sb::train
