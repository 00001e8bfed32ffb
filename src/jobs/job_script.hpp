// Batch scripts for one suite case on Slurm, PBS Pro, LSF and Flux: directives for the job's
// shape, account/partition/QOS and time, then one launch line in which every word is quoted.
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
// The lines after the directives: a comment naming the job, `set -eu`, and `exec` of the
// launcher and the rank command, every word quoted.
std::string script_body(const JobSpec& spec, const std::vector<std::string>& launcher);

}  // namespace sb::jobs
