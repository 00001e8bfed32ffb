// SPDX-License-Identifier: Apache-2.0
// `scalebench plan --model M --site S --devices N [--global-batch B] [--seq-len T]
// [--attention unfused|flash] [--kernels native|sm80] [--top K] [--json]`: the best feasible configurations of a GPT on N devices of a site, and why the others
// fail. Exit 0 with at least one feasible configuration, 1 with none. Leaves out the search
// (costmodel/plan.hpp).
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "costmodel/plan.hpp"
#include "costmodel/site_profile.hpp"

namespace sb::cli {

namespace {

struct PlanOptions {
  std::string model, site;
  int devices = 0;
  std::int64_t global_batch = 0, seq_len = 0;
  std::string attention = "unfused", kernels = "native";
  int top = 10;
  bool json = false;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string strategy_text(const costmodel::PlanCandidate& c) {
  return fmt::format("dp {} tp {} pp {} micro-batch {} {} zero {} recompute {} {}{}{}{}", c.dp, c.tp, c.pp,
                     c.micro_batch, c.precision, c.zero, c.recompute, c.schedule,
                     c.interleave > 1 ? fmt::format(" interleave {}", c.interleave) : "",
                     c.tp_overlap ? " sequence-parallel tp-overlap" : "", c.p2p_overlap ? " p2p-overlap" : "");
}

std::string human_plan(const costmodel::PlanRequest& request, const costmodel::SiteProfile& site,
                       const costmodel::PlanResult& r, int top) {
  std::string out = fmt::format("{} on {} × {} (site {}), global batch {} of {} tokens, {} attention{}: {} candidates, "
                                "{} feasible\n", request.model, request.devices, site.device, site.name,
                                request.global_batch, r.seq_len, request.attention,
                                request.kernels == "native" ? "" : fmt::format(", {} kernels", request.kernels),
                                r.candidates, r.feasible.size());
  if (!r.feasible.empty()) {
    out += fmt::format("{:>4} {:>5} {:>3} {:>3} {:>4} {:>5} {:>5} {:>4} {:>9} {:>6} {:>3} {:>6} {:>9} {:>10} {:>8} {:>6}  "
                       "{}\n",
                       "rank", "dp", "tp", "pp", "mb", "m", "prec", "zero", "recompute", "sched", "v", "sp+ovl", "step s",
                       "tokens/s", "TFLOP/s", "MFU", "memory GiB: params/grads/optimizer/activations/comm = total");
    for (std::size_t i = 0; i < r.feasible.size() && static_cast<int>(i) < top; ++i) {
      const costmodel::PlanCandidate& c = r.feasible[i];
      const costmodel::Prediction& p = c.prediction;
      out += fmt::format("{:>4} {:>5} {:>3} {:>3} {:>4} {:>5} {:>5} {:>4} {:>9} {:>6} {:>3} {:>6} {:>9.4f} {:>10.4g} "
                         "{:>8.1f} {:>5.1f}%  {:.1f}/{:.1f}/{:.1f}/{:.1f}/{:.1f} = {:.1f}\n",
                         i + 1, c.dp, c.tp, c.pp, c.micro_batch, p.micro_batches, c.precision, c.zero, c.recompute,
                         c.schedule, c.interleave, c.tp_overlap ? "yes" : "no", p.step_time_s, p.tokens_per_s, p.tflops_per_device, 100.0 * p.mfu,
                         p.memory.params / kGiB, p.memory.grads / kGiB, p.memory.optimizer / kGiB,
                         p.memory.activations / kGiB, p.memory.comm / kGiB, p.memory.total() / kGiB);
    }
  } else {
    out += "no feasible configuration\n";
    if (request.seq_len == 0)
      out += fmt::format("(at the model's longest sequence, {} tokens: --seq-len plans the length you train at)\n",
                         r.seq_len);
  }
  if (!r.feasible.empty())
    out += fmt::format("each MFU against its precision's dense peak (rank 1: {:.4g} TFLOP/s {}, {}); {}\n",
                       r.feasible.front().prediction.peak_flops / 1e12, r.feasible.front().prediction.precision,
                       r.feasible.front().prediction.peak_flops_source, costmodel::kMfuConvention);
  if (!r.feasible.empty() && !r.feasible.front().prediction.calibrated)
    out += "not calibrated: the site has no gemm: model, calibrated efficiency or kernel times, so every GEMM runs at "
           "the datasheet peak (an upper bound on speed, which can reorder the ranking); give it a gemm: model "
           "(jobs/README.md) or run calibrate\n";
  if (!r.rejected.empty()) out += "rejected:\n";
  for (const costmodel::PlanRejection& g : r.rejected)
    out += fmt::format("  {} ({} candidates), e.g. {}: {}\n", g.reason, g.count, strategy_text(g.example),
                       g.example.prediction.reason);
  return out;
}

}  // namespace

std::function<int()> add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "search dp × tp × pp (also a pp that does not divide the layers, up to "
                                             "half of them, in balanced stages) × micro-batch × precision (fp8 too "
                                             "where the site "
                                             "models it) × ZeRO × recompute × schedule (1f1b also interleaved over "
                                             "virtual stages, its sends beside the compute; and, with tp > 1, "
                                             "sequence parallelism with its collectives under the GEMMs, or not) for "
                                             "the fastest feasible configurations of a model on a site");
  cmd->add_option("--model", options->model, "a named GPT (gpt-1.3b, gpt-175b, ...)")->required();
  cmd->add_option("--site", options->site, "site profile: a file, or a name in jobs/sites")->required();
  cmd->add_option("--devices", options->devices, "device count")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--global-batch", options->global_batch, "sequences per step (default: one per device)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seq-len", options->seq_len, "sequence length (default: the model's maximum)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--attention", options->attention,
                  "the attention every candidate runs: unfused (the default, the trainer's) or flash (one fused "
                  "kernel, as large runs use)");
  cmd->add_option("--kernels", options->kernels,
                  "the instructions the software's kernels issue: native (the default) or sm80 (compute "
                  "capability 8.0's on a later GPU: FlashAttention 1 and 2, CUDA 11 builds; the site's "
                  "gemm.e_max_sm80)");
  cmd->add_option("--top", options->top, "how many feasible configurations to show (default 10)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", options->json, "answer in JSON");
  return [options]() {
    const costmodel::SiteProfile site = costmodel::load_site_profile(costmodel::site_profile_path(options->site, "--site"));
    costmodel::require_devices_within_site(site, options->devices, "--devices");
    costmodel::PlanRequest request;
    request.model = options->model;
    request.devices = options->devices;
    request.global_batch = options->global_batch > 0 ? options->global_batch : options->devices;
    request.seq_len = options->seq_len;
    request.attention = options->attention;
    request.kernels = options->kernels;
    const costmodel::PlanResult result = costmodel::plan_search(request, site);
    if (options->json)
      std::puts(costmodel::plan_json(request, site, result, options->top).dump(2).c_str());
    else
      std::fputs(human_plan(request, site, result, options->top).c_str(), stdout);
    return result.feasible.empty() ? 1 : 0;
  };
}

}  // namespace sb::cli
