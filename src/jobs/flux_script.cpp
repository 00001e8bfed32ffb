// SPDX-License-Identifier: Apache-2.0
// Flux: #flux: directives (-N nodes, -n ranks, cores and GPUs per rank, -t minutes, queue,
// bank for the account, USR1 two minutes before the limit, then the site's own directives),
// the site's setup and a `flux run` launch.
//
// Requeue: flux-core has no requeue of a job and no preemption of its own (flux-core issue
// 5739, "standby/preemptible jobs", is open); what it documents for running work again is a
// new job with a dependency (flux-submit(1), "afterany:JOBID"). After the trainer's requeue
// status (the --signal before the time limit, or a USR1 sent by `flux job kill`: checkpoint
// written) the script submits itself again to the enclosing instance (`flux --parent`: the
// script runs inside its own batch instance, which ends with it), to start once this job has
// ended (`flux getattr jobid`: this instance's job id there); that job reruns this script and
// resumes from the checkpoint.
#include <fmt/format.h>

#include "jobs/job_script.hpp"
#include "jobs/shell_quote.hpp"

namespace sb::jobs {

namespace {

std::string flux_requeue_tail(const JobSpec& spec) {
  const std::string why =
      "# 75: scalebench train stopped at a step boundary after a signal (--signal above, or a preemption\n"
      "# notice) with its checkpoint written; the job submitted here reruns this script once this one\n"
      "# has ended and resumes from it.\n";
  if (spec.script.empty())
    return requeue_tail(why, "echo \"scalebench: submit this job again to resume from its checkpoint\" >&2");
  return requeue_tail(why, fmt::format("job=$(flux getattr jobid); flux --parent batch --dependency=\"afterany:$job\" "
                                       "--output={} {}",
                                       follow_up_log(spec, "$job"), shell_quote(spec.script)));
}

}  // namespace

std::string write_flux_script(const JobSpec& spec) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#flux: --job-name={}\n", spec.job_name);
  s += fmt::format("#flux: -N {}\n", spec.nodes);
  s += fmt::format("#flux: -n {}\n", spec.world_size);
  if (spec.cpus_per_task > 0) s += fmt::format("#flux: -c {}\n", spec.cpus_per_task);
  if (spec.gpus_per_task > 0) s += fmt::format("#flux: -g {}\n", spec.gpus_per_task);
  s += fmt::format("#flux: -t {}m\n", spec.time_limit_minutes);
  if (!spec.partition.empty()) s += fmt::format("#flux: --queue={}\n", spec.partition);
  if (!spec.account.empty()) s += fmt::format("#flux: --bank={}\n", spec.account);
  if (!spec.qos.empty()) s += fmt::format("# (the site's QOS '{}' has no Flux equivalent)\n", spec.qos);
  s += "#flux: --signal=USR1@2m\n";
  s += site_directives(spec, Scheduler::flux, "#flux:");
  std::vector<std::string> run{"flux", "run", "-N", std::to_string(spec.nodes), "-n", std::to_string(spec.world_size)};
  if (spec.cpus_per_task > 0) run.insert(run.end(), {"-c", std::to_string(spec.cpus_per_task)});
  if (spec.gpus_per_task > 0) run.insert(run.end(), {"-g", std::to_string(spec.gpus_per_task)});
  return s + script_body(spec, launcher_words(spec, run), flux_requeue_tail(spec));
}

}  // namespace sb::jobs
