// Slurm: #SBATCH directives (shape, time, account/partition/QOS, GPUs, USR1 two minutes
// before the time limit so the trainer records the run as interrupted) and an srun launch.
#include <fmt/format.h>

#include "jobs/job_script.hpp"

namespace sb::jobs {

std::string write_slurm_script(const JobSpec& spec) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", spec.job_name);
  s += fmt::format("#SBATCH --nodes={}\n", spec.nodes);
  s += fmt::format("#SBATCH --ntasks={}\n", spec.world_size);
  s += fmt::format("#SBATCH --ntasks-per-node={}\n", spec.tasks_per_node);
  if (spec.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", spec.cpus_per_task);
  if (spec.gpus_per_task > 0) {
    s += fmt::format("#SBATCH --gpus-per-task={}\n", spec.gpus_per_task);
    s += fmt::format("#SBATCH --gpu-bind={}\n", spec.gpu_bind);
  }
  s += fmt::format("#SBATCH --time={}\n", hours_minutes_seconds(spec.time_limit_minutes));
  if (!spec.account.empty()) s += fmt::format("#SBATCH --account={}\n", spec.account);
  if (!spec.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", spec.partition);
  if (!spec.qos.empty()) s += fmt::format("#SBATCH --qos={}\n", spec.qos);
  s += "#SBATCH --signal=USR1@120\n";
  // srun does not take --cpus-per-task from the allocation in every Slurm release: say it.
  std::vector<std::string> srun{"srun"};
  if (spec.cpus_per_task > 0) srun.push_back(fmt::format("--cpus-per-task={}", spec.cpus_per_task));
  return s + script_body(spec, launcher_words(spec, srun));
}

}  // namespace sb::jobs
