// SPDX-License-Identifier: Apache-2.0
// The JSON form of a Prediction, with the field names DESIGN.md fixes for `predict --json`
// and `plan --json`. Leaves out the human table (cli/command_predict.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "costmodel/step_prediction.hpp"

namespace sb::costmodel {

// feasible, reason, step_time_s, compute_s, comm_s (tp_comm_s, p2p_s, dp_comm_s), bubble_s,
// optimizer_s, nodes, ranks_per_node, tp_link, dp_link, pp_link, tokens_per_s (GPT)
// or samples_per_s (ResNet), tflops_per_device, mfu, memory_bytes {params, grads, optimizer,
// activations, total}, and the plan: stages (units per pipeline stage), stage_rule,
// micro_batches, micro_batch. An infeasible prediction carries its reason and null numbers
// (the plan's figures stay where the plan itself was feasible).
nlohmann::json prediction_json(const Prediction& p);

}  // namespace sb::costmodel
