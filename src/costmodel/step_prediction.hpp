// SPDX-License-Identifier: Apache-2.0
// `predict`'s model of one training step of a case on a site: per-op costs from the analytic
// pieces (GEMM FLOPs over peak × efficiency plus the element-wise work's memory traffic over
// the memory bandwidth, tp collectives, pipeline p2p, dp gradient buckets, a memory-bound
// optimizer), ordered in time by the per-rank event simulation (step_simulation.hpp), whose
// step time and critical rank's breakdown it reports; memory per rank by category; throughput
// and MFU. Leaves out calibration (calibrate) and the search over configurations (plan).
#pragma once

#include <string>

#include "costmodel/site_profile.hpp"
#include "plan/config.hpp"
#include "plan/run_plan.hpp"

namespace sb::costmodel {

struct RankMemory {  // bytes on the most loaded rank
  double params = 0, grads = 0, optimizer = 0, activations = 0;
  // ZeRO-3's working buffers (the trainer's category comm): two units' 16-bit parameters
  // gathered whole (the one computing, the next prefetched) and one unit's whole gradient before
  // its reduce-scatter, the largest unit's; under pipeline parallelism (pp > 1) the rank's whole
  // parameters, gathered once a step and held, and their whole gradient accumulated over the
  // micro-batches (FSDP under torch.distributed.pipelining); 0 at other stages or over one
  // data-parallel rank
  double comm = 0;
  double total() const { return params + grads + optimizer + activations + comm; }
};

// Why a configuration was refused, as a kind (plan groups its rejections by it).
enum class Refusal {
  none, devices, tp_beyond_node, tp_heads, pp_layers, batch_split, interleave, sequence_parallel, memory
};
// The kind of a plan's own refusal (the devices, the heads, the layers, the batch, interleaving,
// sequence parallelism).
Refusal refusal_of(plan::Refusal refusal);

// What MFU counts, written beside every MFU the cost model answers (and the trainer's summary):
// the convention of Narayanan et al. 2021 (eq. 2) and PaLM's appendix B.
inline constexpr const char* kMfuConvention =
    "mfu: model FLOPs per step (3 x forward FLOPs, attention's s^2 terms included; recomputation not "
    "counted) over devices x step time x the dense peak of the precision; hfu: the same with the "
    "executed FLOPs (recomputed forwards included)";

struct Prediction {
  // The run this predicts, resolved by the function the trainer resolves its run with: its
  // stages and micro-batch plan are the trainer's (refusals a world or batch decides come from it).
  plan::RunPlan plan;
  bool feasible = false;
  std::string reason;  // why not, when !feasible
  Refusal refusal = Refusal::none;
  std::string model, precision;
  std::string kernels = "native";  // the case's model.kernels: the GEMM constants it ran on
  bool gpt = true;  // tokens_per_s for the GPT, samples_per_s for the ResNet
  int devices = 0, dp = 1, tp = 1, pp = 1, micro_batches = 1;
  // Devices each rank computes on: 1, or on a CPU-core site the cores its threads get (the
  // case's threads, at most the node's cores shared among the ranks on it).
  double devices_per_rank = 1;
  // Where the ranks sit: the most ranks one node holds, and the nodes. The trainer passes what it
  // observed (RankPlacement); otherwise each node holds the site's devices_per_node ranks.
  int ranks_per_node = 1, nodes = 1;
  bool placement_observed = false;
  // The link level each group's traffic crosses: "intra_node", "inter_node", or "none" for a
  // group of one rank (the pp entry is the link between neighbouring stages).
  std::string tp_link, dp_link, pp_link;
  std::int64_t micro_batch = 0;
  // The parts below are those of the critical rank (the one whose simulated step ends last):
  // step_time_s = compute_s + comm_s + bubble_s + optimizer_s.
  double step_time_s = 0;
  int critical_stage = 0;  // the pipeline stage of the critical rank
  double compute_s = 0;    // forward, backward and recomputation: GEMMs and memory-bound
                           // element-wise work
  double comm_s = 0;       // tp_comm_s + p2p_s + dp_comm_s
  double tp_comm_s = 0, p2p_s = 0;  // tp collectives inside the ops; sends to neighbouring stages
  double dp_comm_s = 0;    // the part of the gradient reduction the backward does not hide
  double bubble_s = 0;     // idle before the rank's last backward ends (pipeline fill, drain, waits)
  double optimizer_s = 0;
  double tokens_per_s = 0, samples_per_s = 0;
  double tflops_per_device = 0;  // executed FLOPs (recomputation included) per second and device
  double mfu = 0;                // model FLOPs (3 × forward) over the dense peak of the precision
  double hfu = 0;                // executed FLOPs (recomputation included) over the same peak
  std::string peak_flops_source;  // the site's peak_flops_source and the key read (kMfuConvention)
  // the NCCL algorithm chosen for one tp collective and for the dp bucket of bucket_mb ("ring",
  // "tree", "nvls"), or "ring-formula" where the site times collectives by its α/β; "" without
  // such a group
  std::string tp_algorithm, dp_algorithm;
  double model_flops_per_step = 0, executed_flops_per_step = 0;
  double peak_flops = 0, gemm_efficiency = 1;
  bool calibrated = false;  // the site carried a fitted GEMM efficiency or kernel times
  bool kernel_timed = false;  // compute and optimizer times are the sum of the site's kernel times
  RankMemory memory;
  std::vector<RankMemory> rank_memory;  // the same for every pipeline stage (pp rank), in order
  double memory_available = 0;  // the site's bytes per device
  double cost_per_hour = 0;     // devices × price; 0 when the site gives no price
  std::string currency;         // the site's, of cost_per_hour
};

// Where a run's ranks are, as the trainer observed them after MPI started: its nodes and the
// most ranks one of them holds (ranks fill nodes in world-rank order, as mpirun and srun place
// them by default).
struct RankPlacement {
  int nodes = 1;
  int ranks_per_node = 1;
};

// devices 0: dp·tp·pp. placement: the ranks' observed nodes; null: the site's nodes filled. Impossible configurations (devices ≠ dp·tp·pp, tp beyond a node, tp not
// dividing the heads, a batch that does not split, too little memory) come back with
// feasible = false and a reason; config mistakes that no device count could fix are UserError.
Prediction predict_step(const plan::TrainConfig& config, const SiteProfile& site, int devices = 0,
                        const RankPlacement* placement = nullptr);

}  // namespace sb::costmodel
