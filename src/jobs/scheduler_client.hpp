// SPDX-License-Identifier: Apache-2.0
// Talking to a scheduler through its own command-line clients: submit a script (sbatch,
// qsub, bsub, flux batch) and read back the job id, and ask a job's state (squeue, then
// `sacct -c` once Slurm has forgotten it; qstat; bjobs; flux jobs). Leaves out writing the
// scripts (job_script.hpp) and what the states mean for results (status command).
#pragma once

#include <filesystem>
#include <string>

#include "jobs/job_spec.hpp"

namespace sb::jobs {

// Submits `script` with its standard output and error going to `log`; returns the job id.
// `slurm_log_suffix` is appended to the log name unescaped (a Slurm file-name pattern such
// as "%a.out" for one log per array index). UserError with the client's message when it
// fails or is not installed.
std::string submit_script(Scheduler scheduler, const std::filesystem::path& script,
                          const std::filesystem::path& log, const std::string& slurm_log_suffix = "");

// The scheduler's word for the job's state (PENDING, RUNNING, COMPLETED, FAILED, ... as the
// scheduler spells it), or "unknown (...)" with the reason when the scheduler cannot say.
std::string job_state(Scheduler scheduler, const std::string& job_id);

}  // namespace sb::jobs
