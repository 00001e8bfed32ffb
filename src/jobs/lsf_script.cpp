// SPDX-License-Identifier: Apache-2.0
// LSF: #BSUB -n ranks, span[ptile=ranks per node], cores per rank (affinity[core(n)]), wall time in hours:minutes, project (-P,
// the site's account), queue (-q), GPUs per host, USR1 two minutes before the limit
// (-wa/-wt), rerunnable (-r) and requeued on the trainer's requeue status (-Q "75"), then the
// site's own directives; the site's setup and an mpirun launch. The script is submitted on
// bsub's standard input (bsub < F), the only way LSF reads #BSUB lines.
//
// Requeue: LSF itself requeues the job when it exits with 75 (the trainer stopped after the
// signal with its checkpoint written) and reruns it after a host failure; the rerun runs this
// script again, and the trainer resumes from the checkpoint.
#include <fmt/format.h>

#include "jobs/job_script.hpp"

namespace sb::jobs {

std::string write_lsf_script(const JobSpec& spec) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#BSUB -J {}\n", spec.job_name);
  s += fmt::format("#BSUB -n {}\n", spec.world_size);
  s += fmt::format("#BSUB -R \"span[ptile={}]\"\n", spec.tasks_per_node);
  if (spec.cpus_per_task > 0) s += fmt::format("#BSUB -R \"affinity[core({})]\"\n", spec.cpus_per_task);
  if (spec.gpus_per_task > 0)
    s += fmt::format("#BSUB -gpu \"num={}:mode=exclusive_process\"\n", spec.tasks_per_node * spec.gpus_per_task);
  s += fmt::format("#BSUB -W {}:{:02d}\n", spec.time_limit_minutes / 60, spec.time_limit_minutes % 60);
  if (!spec.account.empty()) s += fmt::format("#BSUB -P {}\n", spec.account);
  if (!spec.partition.empty()) s += fmt::format("#BSUB -q {}\n", spec.partition);
  if (!spec.qos.empty()) s += fmt::format("# (the site's QOS '{}' has no LSF equivalent)\n", spec.qos);
  s += "#BSUB -wa USR1\n#BSUB -wt 2\n";
  s += fmt::format("#BSUB -r\n#BSUB -Q \"{}\"\n", kRequeueExitStatus);
  s += site_directives(spec, Scheduler::lsf, "#BSUB");
  JobSpec shared = spec;  // mpirun leaves a node's ranks on one mask
  shared.ranks_sharing_cpus = spec.tasks_per_node;
  const std::string why =
      "# 75: scalebench train stopped at a step boundary after a signal (-wa above, or a preemption\n"
      "# notice) with its checkpoint written; LSF requeues the job on it (-Q above), and the requeued\n"
      "# job reruns this script and resumes from it.\n";
  return s + script_body(shared, launcher_words(spec, {"mpirun", "-np", std::to_string(spec.world_size)}),
                         requeue_tail(why, ""));
}

}  // namespace sb::jobs
