// SPDX-License-Identifier: Apache-2.0
// The prediction `train` stores with every run: which site profile a case names (`site:`, a
// name in jobs/sites or a path; this machine's profile by default on the cpu), and the cost
// model's prediction of the case in the form the trainer writes and compares
// (train/run_prediction.hpp). Leaves out the model (step_prediction) and the writing (trainer).
#pragma once

#include <string>

#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "io/attr_value.hpp"
#include "plan/config.hpp"
#include "plan/run_prediction.hpp"

namespace sb::costmodel {

// The site a case's prediction uses: config.site, else this-machine for device cpu; empty
// for a cuda case that names none.
std::string site_of(const plan::TrainConfig& config);

// The prediction's attributes as the run's `prediction` group stores them: site, site_file,
// device, calibrated, devices_per_rank, feasible, reason, step_time_s, compute_s, comm_s, tp_comm_s, p2p_s, dp_comm_s,
// bubble_s, optimizer_s, tokens_per_s or samples_per_s, tflops_per_device, mfu, and
// memory_params, memory_grads, memory_optimizer, memory_activations, memory_comm (ZeRO-3's gather
// buffers), memory_total (bytes, the most loaded rank), and the plan's stages, micro_batches and micro_batch; hfu, mfu_convention,
// peak_flops, peak_flops_precision, peak_flops_source, tp_algorithm, dp_algorithm, nodes,
// ranks_per_node, placement ("observed" by the trainer, or "site": its nodes filled), tp_link,
// dp_link, pp_link ("intra_node", "inter_node", "none"). An infeasible
// prediction stores its reason and no numbers. predict_run adds band_step_time_low_s,
// band_step_time_high_s, band_rows and band_method where the site's device has a band
// (prediction_band.hpp).
io::Attributes prediction_attributes(const Prediction& p, const SiteProfile& site);

// Predicts the case on its site (site_of) for the trainer; a case with no site gets an
// infeasible prediction saying so. UserError for a site file that is missing or wrong.
// placement: where the trainer found its ranks (nodes, ranks per node); null before MPI starts.
// The warning of a cpu run predicted from kernel times that calibrate timed on another CPU than
// `this_cpu` (core/cpu_identity.hpp), naming both; "" when they match, the site does not say
// which CPU it was calibrated on, or the prediction did not use kernel times.
std::string calibrated_elsewhere(const plan::TrainConfig& config, const SiteProfile& site, const Prediction& p,
                                 const std::string& this_cpu);

plan::RunPrediction predict_run(const plan::TrainConfig& config, const RankPlacement* placement = nullptr);

}  // namespace sb::costmodel
