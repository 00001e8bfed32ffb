// SPDX-License-Identifier: Apache-2.0
// `plan`'s search: every dp × tp × pp grid of a device count, every micro-batch size that
// divides the per-pipeline batch, precision (bf16, fp16, fp32), ZeRO stage 0–3, recomputation
// (none, selective, full) and pipeline schedule (1f1b, gpipe; one of them when pp = 1; 1f1b also
// interleaved over each even split of a rank's layers, its sends beside the compute), with tp > 1
// without and with sequence parallelism under the GEMMs, each predicted by predict_step; the
// feasible ones ranked by step time (the global batch is fixed, so equally by tokens/s), the rest
// grouped by why they fail. Leaves out printing (cli/command_plan.cpp), uneven stages and the
// ResNet (GPT only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"

namespace sb::costmodel {

struct PlanRequest {
  std::string model;             // a named GPT: "gpt-175b"
  int devices = 0;
  std::int64_t global_batch = 0;  // sequences per step
  std::int64_t seq_len = 0;       // 0: the model's maximum
  // every candidate's model.attention (unfused, flash) and model.kernels (native, sm80)
  std::string attention = "unfused", kernels = "native";
};

struct PlanCandidate {
  std::int64_t dp = 1, tp = 1, pp = 1, micro_batch = 1, zero = 0;
  std::string precision, recompute, schedule;
  // tp > 1: sequence parallelism with its pairs under the GEMMs (strategy.sequence_parallel and
  // tp_overlap, the layout of NVIDIA's published Megatron runs), or neither
  bool tp_overlap = false;
  // pp > 1 under 1f1b: Megatron-LM's interleaved schedule over `interleave` virtual stages a rank
  // (strategy.interleave; 1: none), its layers split evenly (strategy.stages even), searched with
  // the pipeline's sends beside the compute (strategy.p2p_overlap), as NeMo runs every
  // interleaved layout it publishes
  std::int64_t interleave = 1;
  bool p2p_overlap = false;
  // precision.main_grads: fp32 (the trainer's, Megatron-LM's default), or under virtual stages in
  // 16 bits "storage" (the gradients reduced in 16 bits, grad_sync_dtype, as NVIDIA's published
  // GPT-3 recipes run them)
  std::string main_grads = "fp32";
  Prediction prediction{};  // its reason when refused
};

struct PlanRejection {
  std::string reason;     // the group: "too little memory", "tp beyond one node", ...
  std::int64_t count = 0;  // candidates refused for it
  PlanCandidate example;  // one of them (for memory, the one needing the least)
};

struct PlanResult {
  std::int64_t seq_len = 0;             // the sequence the candidates were predicted with
  std::int64_t candidates = 0;          // visited
  std::vector<PlanCandidate> feasible;  // all of them, fastest first
  std::vector<PlanRejection> rejected;  // most frequent reason first
};

// UserError when the model is not a named GPT or a count is not positive.
PlanResult plan_search(const PlanRequest& request, const SiteProfile& site);

// The case plan_search predicts for a dp × tp × pp grid of a request, and for one candidate of
// it: what `predict` and `train` would be given for the same layout.
plan::TrainConfig plan_grid_config(const PlanRequest& request, std::int64_t seq_len, std::int64_t dp,
                                   std::int64_t tp, std::int64_t pp);
plan::TrainConfig plan_candidate_config(const plan::TrainConfig& grid, const PlanCandidate& candidate);

// One candidate: prediction_json's fields plus dp, tp, pp, micro_batch, micro_batches,
// precision, zero, recompute, schedule, sequence_parallel, tp_overlap, interleave, p2p_overlap,
// main_grads.
nlohmann::json plan_candidate_json(const PlanCandidate& candidate);
// {"model", "site", "devices", "global_batch", "seq_len", "attention", "kernels", "candidates", "feasible_count",
//  "feasible": [the first `top`], "rejected": [{"reason", "count", "example"}]}
nlohmann::json plan_json(const PlanRequest& request, const SiteProfile& site, const PlanResult& result,
                         int top);

}  // namespace sb::costmodel
