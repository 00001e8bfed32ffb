// SPDX-License-Identifier: Apache-2.0
// Client command lines and the parsing of their answers, one branch per scheduler.
#include "jobs/scheduler_client.hpp"

#include <fmt/format.h>

#include <regex>

#include "core/check.hpp"
#include "jobs/process.hpp"

namespace sb::jobs {

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string first_line(const std::string& text) {
  const std::string t = trimmed(text);
  return t.substr(0, t.find('\n'));
}

}  // namespace

std::string submit_script(Scheduler scheduler, const std::filesystem::path& script,
                          const std::filesystem::path& log, const std::string& slurm_log_suffix) {
  ProcessResult r;
  std::string client;
  switch (scheduler) {
    case Scheduler::slurm: {
      client = "sbatch";
      std::string pattern;  // sbatch expands %j, %x, ... in file names: a literal '%' is %%
      for (const char ch : log.string()) pattern += ch == '%' ? std::string("%%") : std::string(1, ch);
      pattern += slurm_log_suffix;
      r = run_process({client, "--parsable", "--output=" + pattern, "--error=" + pattern, script.string()});
      break;
    }
    case Scheduler::pbs:
      client = "qsub";
      r = run_process({client, "-o", log.string(), "-j", "oe", script.string()});
      break;
    case Scheduler::lsf:
      client = "bsub";
      r = run_process({client, "-o", log.string(), "-e", log.string()}, script.string());
      break;
    case Scheduler::flux:
      client = "flux";
      r = run_process({client, "batch", "--output=" + log.string(), script.string()});
      break;
  }
  SB_USER_CHECK(r.exit_code == 0, "{} refused '{}' (exit {}): {}", client, script.string(), r.exit_code,
                first_line(r.err.empty() ? r.out : r.err));
  std::string id = first_line(r.out);
  if (scheduler == Scheduler::slurm) id = id.substr(0, id.find(';'));  // "123;cluster"
  if (scheduler == Scheduler::lsf) {                                     // "Job <123> is submitted ..."
    std::smatch m;
    SB_USER_CHECK(std::regex_search(id, m, std::regex("<([0-9]+)>")), "bsub gave no job id for '{}': {}",
                  script.string(), id);
    id = m[1];
  }
  SB_USER_CHECK(!id.empty(), "{} gave no job id for '{}'", client, script.string());
  return id;
}

std::string job_state(Scheduler scheduler, const std::string& job_id) {
  ProcessResult r;
  switch (scheduler) {
    case Scheduler::slurm: {
      r = run_process({"squeue", "--noheader", "--jobs=" + job_id, "--format=%T"});
      const std::string state = first_line(r.out);
      if (r.exit_code == 0 && !state.empty()) return state;
      // Gone from the queue: the job completion record (works without slurmdbd).
      r = run_process({"sacct", "-c", "--noheader", "--jobs=" + job_id, "--format=state%20"});
      if (r.exit_code != 0) r = run_process({"sacct", "--noheader", "-X", "--jobs=" + job_id, "--format=state%20"});
      break;
    }
    case Scheduler::pbs: {
      r = run_process({"qstat", "-x", "-f", job_id});
      std::smatch m;
      if (r.exit_code == 0 && std::regex_search(r.out, m, std::regex("job_state = (\\S+)"))) return m[1];
      break;
    }
    case Scheduler::lsf: r = run_process({"bjobs", "-noheader", "-o", "stat", job_id}); break;
    case Scheduler::flux: r = run_process({"flux", "jobs", "--no-header", "--format={status}", job_id}); break;
  }
  const std::string state = first_line(r.out);
  if (r.exit_code == 0 && !state.empty()) return state;
  return fmt::format("unknown ({})", r.exit_code == 127 ? "scheduler client not installed"
                                     : r.err.empty()    ? "the scheduler no longer knows the job"
                                                        : first_line(r.err));
}

}  // namespace sb::jobs
