// Job shape and command of one suite case.
#include "jobs/job_spec.hpp"

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
  spec.cpus_per_task = s.cpus_per_task;
  spec.gpus_per_task = s.gpus_per_task;
  spec.gpu_bind = s.gpu_bind;
  spec.time_limit_minutes = s.time_limit_minutes;
  spec.account = s.account;
  spec.partition = s.partition;
  spec.qos = s.qos;
  spec.launcher = s.launcher;
  spec.command = {exe, "train", "--config", paths.config.string(), "--out", paths.result.string(), "--run-id", c.id};
  return spec;
}

}  // namespace sb::jobs
