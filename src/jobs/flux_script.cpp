// Flux: #flux: directives (-N nodes, -n ranks, cores and GPUs per rank, -t minutes, queue,
// bank for the account, USR1 two minutes before the limit) and a `flux run` launch.
#include <fmt/format.h>

#include "jobs/job_script.hpp"

namespace sb::jobs {

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
  std::vector<std::string> run{"flux", "run", "-N", std::to_string(spec.nodes), "-n", std::to_string(spec.world_size)};
  if (spec.cpus_per_task > 0) run.insert(run.end(), {"-c", std::to_string(spec.cpus_per_task)});
  if (spec.gpus_per_task > 0) run.insert(run.end(), {"-g", std::to_string(spec.gpus_per_task)});
  return s + script_body(spec, launcher_words(spec, run));
}

}  // namespace sb::jobs
