// SPDX-License-Identifier: Apache-2.0
// Job shape and command of one suite case.
#include "jobs/job_spec.hpp"

#include <algorithm>
#include <cctype>

#include "core/check.hpp"
#include "jobs/shell_quote.hpp"

namespace sb::jobs {

Scheduler parse_scheduler(const std::string& name, const std::string& where) {
  if (name == "slurm") return Scheduler::slurm;
  if (name == "pbs") return Scheduler::pbs;
  if (name == "lsf") return Scheduler::lsf;
  if (name == "flux") return Scheduler::flux;
  throw UserError(fmt::format("{}: unknown scheduler '{}' (known: slurm, pbs, lsf, flux)", where, name));
}

const char* scheduler_name(Scheduler scheduler) {
  switch (scheduler) {
    case Scheduler::slurm: return "slurm";
    case Scheduler::pbs: return "pbs";
    case Scheduler::lsf: return "lsf";
    case Scheduler::flux: return "flux";
  }
  return "?";
}

std::string file_id(const std::string& case_id) {
  std::string out;
  for (const char ch : case_id)
    out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ? ch : '_';
  if (out.empty() || out[0] == '.') out = "_" + out;  // never hidden, never '..'
  return out;
}

namespace {

// The case's `threads` (0 when it sets none).
int case_threads(const plan::SuiteCase& c) {
  const YAML::Node threads = c.config["threads"];
  return threads && threads.IsScalar() ? threads.as<int>() : 0;
}

int cpus_per_task_of(const plan::SuiteCase& c, const costmodel::SiteProfile& site, std::int64_t tasks_per_node) {
  if (const int threads = case_threads(c); threads > 0) return threads;
  if (site.scheduler.cpus_per_task > 0) return site.scheduler.cpus_per_task;
  if (site.device_is_cpu_core) return static_cast<int>(std::max<std::int64_t>(1, site.devices_per_node / tasks_per_node));
  return 0;
}

}  // namespace

JobSpec make_job_spec(const std::string& suite_name, const plan::SuiteCase& c,
                      const costmodel::SiteProfile& site, const std::string& exe, const JobPaths& paths) {
  JobSpec spec;
  spec.suite = suite_name;
  spec.case_id = c.id;
  spec.site = site.name;
  spec.job_name = directive_value(suite_name + "." + c.id, fmt::format("the job name of case '{}'", c.id));
  spec.world_size = c.world_size;
  const std::int64_t per_node = site.devices_per_node;
  spec.nodes = (c.world_size + per_node - 1) / per_node;
  spec.tasks_per_node = std::min(c.world_size, per_node);
  const auto& s = site.scheduler;
  spec.cpus_per_task = cpus_per_task_of(c, site, spec.tasks_per_node);
  spec.gpus_per_task = s.gpus_per_task;
  spec.gpu_bind = s.gpu_bind;
  spec.time_limit_minutes = s.time_limit_minutes;
  spec.account = s.account;
  spec.partition = s.partition;
  spec.qos = s.qos;
  spec.launcher = s.launcher;
  // srun and flux run bind each rank to its own CPUs; a site's own launcher may not
  spec.ranks_sharing_cpus = s.launcher.empty() ? 1 : spec.tasks_per_node;
  spec.setup = s.setup;
  spec.modules = s.modules;
  spec.directives = s.directives;
  spec.script = paths.script.string();
  spec.log = paths.log.string();
  spec.command = {exe, "train", "--config", paths.config.string(), "--out", paths.result.string(), "--run-id", c.id};
  return spec;
}

}  // namespace sb::jobs
