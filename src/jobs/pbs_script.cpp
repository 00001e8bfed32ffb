// SPDX-License-Identifier: Apache-2.0
// PBS Pro: one select chunk per node with mpiprocs ranks (ncpus, ompthreads, ngpus), walltime, account
// (-A) and queue (-q, the site's partition), rerunnable (-r y), then the site's own directives;
// the site's setup and an mpiexec launch. PBS has no QOS and no signal before the time limit:
// those site keys are left out (said in a comment).
//
// Requeue: PBS itself reruns a rerunnable job that it preempts by requeueing or whose node
// fails; the rerun runs this script again, and the trainer resumes from its last checkpoint
// (checkpoint.every: PBS stops the job with SIGTERM, which does not wait for a step boundary).
// After the trainer's requeue status (a USR1 from `qsig -s USR1` or a site's preemption hook:
// checkpoint written) the script submits itself again, to start once this job has ended:
// `qrerun` needs operator or manager privilege, so a job cannot requeue itself.
#include <fmt/format.h>

#include <algorithm>

#include "jobs/job_script.hpp"
#include "jobs/shell_quote.hpp"

namespace sb::jobs {

namespace {

std::string pbs_requeue_tail(const JobSpec& spec) {
  const std::string why =
      "# 75: scalebench train stopped at a step boundary after a signal (qsig -s USR1, or a preemption\n"
      "# notice) with its checkpoint written; the job submitted here reruns this script once this one\n"
      "# has ended and resumes from it.\n";
  if (spec.script.empty())
    return requeue_tail(why, "echo \"scalebench: submit this job again to resume from its checkpoint\" >&2");
  return requeue_tail(why, fmt::format("qsub -W depend=afterany:\"$PBS_JOBID\" -o {} -j oe {}",
                                       follow_up_log(spec, "$PBS_JOBID"), shell_quote(spec.script)));
}

}  // namespace

std::string write_pbs_script(const JobSpec& spec) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#PBS -N {}\n", spec.job_name);
  std::string chunk = fmt::format("{}:ncpus={}:mpiprocs={}", spec.nodes,
                                  spec.tasks_per_node * std::max(spec.cpus_per_task, 1), spec.tasks_per_node);
  if (spec.cpus_per_task > 0) chunk += fmt::format(":ompthreads={}", spec.cpus_per_task);
  if (spec.gpus_per_task > 0) chunk += fmt::format(":ngpus={}", spec.tasks_per_node * spec.gpus_per_task);
  s += fmt::format("#PBS -l select={}\n", chunk);
  s += "#PBS -l place=scatter:excl\n";
  s += fmt::format("#PBS -l walltime={}\n", hours_minutes_seconds(spec.time_limit_minutes));
  if (!spec.account.empty()) s += fmt::format("#PBS -A {}\n", spec.account);
  if (!spec.partition.empty()) s += fmt::format("#PBS -q {}\n", spec.partition);
  if (!spec.qos.empty()) s += fmt::format("# (the site's QOS '{}' has no PBS equivalent)\n", spec.qos);
  s += "#PBS -r y\n";
  s += site_directives(spec, Scheduler::pbs, "#PBS");
  JobSpec shared = spec;  // mpiexec leaves a node's ranks on one mask
  shared.ranks_sharing_cpus = spec.tasks_per_node;
  return s + script_body(shared, launcher_words(spec, {"mpiexec", "-n", std::to_string(spec.world_size)}),
                         pbs_requeue_tail(spec));
}

}  // namespace sb::jobs
