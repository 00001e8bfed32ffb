// SPDX-License-Identifier: Apache-2.0
// prediction_json: the contract fields only, so scripts can rely on them.
#include "costmodel/prediction_json.hpp"

namespace sb::costmodel {

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json j;
  j["feasible"] = p.feasible;
  j["reason"] = p.feasible ? nlohmann::json(nullptr) : nlohmann::json(p.reason);
  const auto number = [&](double value) { return p.feasible ? nlohmann::json(value) : nlohmann::json(nullptr); };
  j["step_time_s"] = number(p.step_time_s);
  j["compute_s"] = number(p.compute_s);
  j["comm_s"] = number(p.comm_s);
  j["tp_comm_s"] = number(p.tp_comm_s);
  j["p2p_s"] = number(p.p2p_s);
  j["dp_comm_s"] = number(p.dp_comm_s);
  j["bubble_s"] = number(p.bubble_s);
  j["optimizer_s"] = number(p.optimizer_s);
  j[p.gpt ? "tokens_per_s" : "samples_per_s"] = number(p.gpt ? p.tokens_per_s : p.samples_per_s);
  j["tflops_per_device"] = number(p.tflops_per_device);
  j["mfu"] = number(p.mfu);
  // what the MFU means and the peak it divides by (kMfuConvention); hfu with recomputation
  j["hfu"] = number(p.hfu);
  j["mfu_convention"] = kMfuConvention;
  j["peak_flops"] = number(p.peak_flops);
  j["peak_flops_precision"] = p.precision;
  j["kernels"] = p.kernels;
  // false: the site has no `gemm:` model, calibrated efficiency or kernel times, so its GEMMs run
  // at the datasheet peak, an upper bound on speed
  j["calibrated"] = p.calibrated;
  j["peak_flops_source"] = p.feasible ? nlohmann::json(p.peak_flops_source) : nlohmann::json(nullptr);
  // the NCCL algorithm of one tp collective and of a dp bucket ("" without the group)
  j["tp_algorithm"] = p.feasible ? nlohmann::json(p.tp_algorithm) : nlohmann::json(nullptr);
  j["dp_algorithm"] = p.feasible ? nlohmann::json(p.dp_algorithm) : nlohmann::json(nullptr);
  // where the ranks sit and the link level each group crosses ("intra_node", "inter_node", "none")
  j["nodes"] = p.nodes;
  j["ranks_per_node"] = p.ranks_per_node;
  j["tp_link"] = p.feasible ? nlohmann::json(p.tp_link) : nlohmann::json(nullptr);
  j["dp_link"] = p.feasible ? nlohmann::json(p.dp_link) : nlohmann::json(nullptr);
  j["pp_link"] = p.feasible ? nlohmann::json(p.pp_link) : nlohmann::json(nullptr);
  // per hour of the whole run's devices; null when infeasible or the site has no price
  j["cost_per_hour"] = p.feasible && p.cost_per_hour > 0 ? nlohmann::json(p.cost_per_hour) : nlohmann::json(nullptr);
  j["currency"] = p.currency;
  // the plan the prediction describes (the trainer's): units per pipeline stage, micro-batches
  const bool planned = p.plan.feasible;
  j["stages"] = planned ? nlohmann::json(p.plan.stages) : nlohmann::json(nullptr);
  j["stage_rule"] = planned ? nlohmann::json(p.plan.stage_rule) : nlohmann::json(nullptr);
  j["micro_batches"] = planned ? nlohmann::json(p.plan.micro_batches) : nlohmann::json(nullptr);
  j["micro_batch"] = planned ? nlohmann::json(p.plan.micro_batch) : nlohmann::json(nullptr);
  if (p.feasible) {
    j["memory_bytes"] = {{"params", p.memory.params},
                         {"grads", p.memory.grads},
                         {"optimizer", p.memory.optimizer},
                         {"activations", p.memory.activations},
                         {"comm", p.memory.comm},
                         {"total", p.memory.total()}};
  } else {
    j["memory_bytes"] = nullptr;
  }
  return j;
}

}  // namespace sb::costmodel
