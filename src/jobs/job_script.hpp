// SPDX-License-Identifier: Apache-2.0
// Batch scripts for one suite case on Slurm, PBS Pro, LSF and Flux: directives for the job's
// shape, account/partition/QOS and time, then the site's own directives, setup lines and module
// loads, then one launch line in which every word is quoted, and what each scheduler does to
// run the case again after the trainer's requeue status.
// One writer per scheduler (slurm_script.cpp, pbs_script.cpp, lsf_script.cpp, flux_script.cpp).
// A Slurm job array runs every case of a suite whose cases share one shape. Leaves out
// submitting (scheduler_client.hpp).
#pragma once

#include <string>
#include <vector>

#include "jobs/job_spec.hpp"

namespace sb::jobs {

std::string write_job_script(Scheduler scheduler, const JobSpec& spec);

std::string write_slurm_script(const JobSpec& spec);
std::string write_pbs_script(const JobSpec& spec);
std::string write_lsf_script(const JobSpec& spec);
std::string write_flux_script(const JobSpec& spec);

// One Slurm array job for all `specs` (index i runs specs[i]); they must share nodes, ranks,
// CPUs and GPUs (UserError naming `suite_source` and the cases otherwise). Directives come
// from specs[0], with `job_name`.
std::string write_slurm_array_script(const std::vector<JobSpec>& specs, const std::string& job_name,
                                     const std::string& suite_source);

// Shared by the writers:
// "HH:MM:SS" of a time limit in minutes.
std::string hours_minutes_seconds(int minutes);
// The launcher words: spec.launcher with {ranks}, {nodes} and {ranks_per_node} replaced, or
// `fallback` when the site gives none.
std::vector<std::string> launcher_words(const JobSpec& spec, const std::vector<std::string>& fallback);
// `export OMP_NUM_THREADS=... OMP_PROC_BIND=... [OMP_PLACES=...]` (and `unset OMP_PLACES` for
// shared masks) when the job asks for CPUs per rank, so the ranks run cpus_per_task threads
// placed as `run` places them; "" otherwise.
std::string openmp_exports(const JobSpec& spec);
// The site's extra directives for `scheduler` (site profile scheduler.directives), one
// "<prefix> <option>" line each, in the site's order; "" when it gives none.
std::string site_directives(const JobSpec& spec, Scheduler scheduler, const std::string& prefix);
// The site's setup lines as written, then `module load '<module>'` per module, under `set -e` (a
// failed load stops the job) and a comment saying this is the site's own text; "" when it
// gives neither.
std::string site_setup(const JobSpec& spec);
// The lines after the directives: a comment naming the job, the site's setup, `set -eu`, the
// OpenMP exports, the launcher and the rank command (every word quoted) keeping its exit
// status, then `requeue_tail`.
std::string script_body(const JobSpec& spec, const std::vector<std::string>& launcher, const std::string& requeue_tail);

// The exit status of `scalebench train` stopped after a signal with its checkpoint written
// (train::kRequeueExitStatus): the scripts requeue or resubmit the job on it, and the job that
// runs next reruns the same command, which resumes from the checkpoint (checkpoint.resume auto).
inline constexpr int kRequeueExitStatus = 75;
// After the launch: `why` (comment lines, each ending in a newline), then `if [ "$status" -eq
// 75 ]; then <requeue>; fi` unless `requeue` is empty (the scheduler requeues by itself), then
// `exit "$status"`.
std::string requeue_tail(const std::string& why, const std::string& requeue);
// The shell words of the job's log for a follow-up job: '<log without .out>'".after-<id>.out"
// where `id` is a shell expansion (the job being replaced).
std::string follow_up_log(const JobSpec& spec, const std::string& id);

}  // namespace sb::jobs
