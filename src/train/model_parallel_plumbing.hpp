// SPDX-License-Identifier: Apache-2.0
// What every model-parallel task does the same way around its model: the tensor-parallel hooks
// a model talks through, the loss handed from the last stage to
// the others, the tied-embedding gradient summed between the first and last stage, and the
// activations passed stage to stage in an evaluation forward. Leaves out the pipeline schedule
// and its executor (pipeline_executor.hpp) and the models themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "parallel/communicator.hpp"
#include "plan/config.hpp"

namespace sb::train {

// The tp communicator as the model's TensorParallelGroup (sum and max all-reduces). The model
// hands it spans in its own memory: on device cuda they are reduced by NCCL, in place on the GPU.
gpt::TensorParallelGroup tensor_parallel_group(parallel::Communicator& tp);
// Each gradient summed over the tp group in place: the sequence-parallel LayerNorm gradients,
// once a step after the data-parallel exchange (both sums are linear: the order is free).
void sum_over_tensor_parallel(parallel::Communicator& tp, const std::vector<std::span<float>>& gradients);

// The last stage's value on every stage of pp (a broadcast from rank pp.size() − 1).
double from_last_stage(parallel::Communicator& pp, double value);

// The first and the last stage each hold a copy of a tied weight and its gradient (on
// `device`); both end with the sum of the two gradients (the same floats on both). The sum is
// staged through host memory (scratch: at least gradient.size() floats), so the exchange is an
// MPI message on every device, like the pipeline's others. Other stages do nothing.
void sum_tied_gradient(parallel::Communicator& pp, std::span<float> gradient, Device device, std::span<float> scratch);
// ... a 16-bit gradient (host memory; `type` bf16 or f16, the bits): both stages add the two in
// fp32 and round the sum once, the same bits on both.
void sum_tied_sixteen_bit_gradient(parallel::Communicator& pp, std::span<std::uint16_t> gradient,
                                   parallel::DataType type);

// An evaluation forward's activations, as bytes in the stage's storage type, in host memory:
// from the previous stage / to the next one (the first stage's previous is the last, whose
// chunk k feeds the first stage's chunk k + 1 under interleaving).
void receive_from_previous_stage(parallel::Communicator& pp, std::span<std::byte> activation);
void send_to_next_stage(parallel::Communicator& pp, std::span<const std::byte> activation);

}  // namespace sb::train
