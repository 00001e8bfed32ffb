// PBS Pro: one select chunk per node with mpiprocs ranks (ncpus, ompthreads, ngpus), walltime, account
// (-A) and queue (-q, the site's partition); mpiexec launch. PBS has no QOS and no signal
// before the time limit: those site keys are left out (said in a comment).
#include <fmt/format.h>

#include <algorithm>

#include "jobs/job_script.hpp"

namespace sb::jobs {

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
  JobSpec shared = spec;  // mpiexec leaves a node's ranks on one mask
  shared.ranks_sharing_cpus = spec.tasks_per_node;
  return s + script_body(shared, launcher_words(spec, {"mpiexec", "-n", std::to_string(spec.world_size)}));
}

}  // namespace sb::jobs
