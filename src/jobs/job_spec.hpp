// SPDX-License-Identifier: Apache-2.0
// What one batch job of a suite needs, independent of the scheduler: its name, its shape
// (nodes, ranks per node, GPUs and CPUs per rank) from the case's world size and the site's
// devices per node, the site's account/partition/QOS and time limit, and the exact command
// each rank runs. Leaves out writing the script (one file per scheduler) and submitting it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "costmodel/site_profile.hpp"
#include "plan/suite.hpp"

namespace sb::jobs {

enum class Scheduler { slurm, pbs, lsf, flux };

// "slurm" | "pbs" | "lsf" | "flux"; UserError naming `where` otherwise.
Scheduler parse_scheduler(const std::string& name, const std::string& where);
const char* scheduler_name(Scheduler scheduler);

struct JobSpec {
  std::string suite, case_id, site;  // for the header comment (quoted there too)
  std::string job_name;              // directive-safe: <suite>.<case> with odd characters as '_'
  std::int64_t world_size = 1;
  std::int64_t nodes = 1, tasks_per_node = 1;
  // CPUs per rank: the case's `threads`; else the site's scheduler.cpus_per_task; else, where a
  // device is a core, the node's cores shared by its ranks. 0: not asked for.
  int cpus_per_task = 0, gpus_per_task = 0;  // 0: not asked for
  // Ranks of a node that the launcher starts on one shared mask (1 where srun or flux run
  // bind each rank to its own CPUs): decides OMP_PROC_BIND / OMP_PLACES, as `run` does.
  std::int64_t ranks_sharing_cpus = 1;
  std::string gpu_bind;                      // Slurm --gpu-bind, with gpus_per_task
  int time_limit_minutes = 60;
  std::string account, partition, qos;       // empty: not asked for
  std::vector<std::string> launcher;         // empty: the scheduler's default
  std::vector<std::string> command;          // what every rank runs: scalebench train ...
  // The site's adaptation (costmodel::SiteScheduler): setup lines and module loads before the
  // launch, extra directive lines per scheduler name.
  std::vector<std::string> setup, modules;
  std::map<std::string, std::vector<std::string>> directives;
  // The script's own file and log (absolute; empty: not known): PBS and Flux submit the script
  // again after the trainer's requeue status.
  std::string script, log;
};

// A file-system-safe form of a case id (letters, digits, '-', '.'; the rest '_').
std::string file_id(const std::string& case_id);

struct JobPaths {
  std::filesystem::path config, result;  // DIR/jobs/<file_id>.yaml, DIR/runs/<file_id>.h5
  std::filesystem::path script, log;     // DIR/jobs/<file_id>.sh and .out; may stay empty
};

// The spec of one case: shape from its world size and site.devices_per_node, the rest from
// site.scheduler; `exe` is the scalebench executable the ranks run.
JobSpec make_job_spec(const std::string& suite_name, const plan::SuiteCase& c,
                      const costmodel::SiteProfile& site, const std::string& exe, const JobPaths& paths);

}  // namespace sb::jobs
