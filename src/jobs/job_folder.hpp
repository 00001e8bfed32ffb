// SPDX-License-Identifier: Apache-2.0
// The folder `scalebench submit --out DIR` fills, and its record of what was submitted:
//   DIR/jobs/<case>.yaml   the case's full config        DIR/jobs/<case>.sh   its job script
//   DIR/jobs/<case>.out    the job's output (scheduler)  DIR/runs/<case>.h5   its result file
//   DIR/jobs/submitted.yaml  suite, scheduler, site, and per case its id, file name and job id
//   DIR/<suite>.h5         what `collect` merges
// With --array (Slurm): one script DIR/jobs/<suite>.array.sh, logs DIR/jobs/<suite>.array-<i>.out.
// <case> is file_id(case id). Leaves out submitting and merging (the commands).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "jobs/job_spec.hpp"

namespace sb::jobs {

struct JobFiles {
  std::filesystem::path config, script, log, result;
};
JobFiles job_files(const std::filesystem::path& dir, const std::string& file_id);
std::filesystem::path record_path(const std::filesystem::path& dir);
std::filesystem::path suite_result_path(const std::filesystem::path& dir, const std::string& suite);
// DIR/jobs/<suite>.array.sh and the log prefix DIR/jobs/<suite>.array- of a job array.
std::filesystem::path array_script_path(const std::filesystem::path& dir, const std::string& suite);
std::filesystem::path array_log_prefix(const std::filesystem::path& dir, const std::string& suite);

struct SubmittedCase {
  std::string id, file_id, job_id;  // job_id empty: not submitted (dry run)
};

struct SubmissionRecord {
  std::string suite, scheduler, site;
  bool array = false;  // one Slurm array job; case i's job id is <array id>_<i>
  std::vector<SubmittedCase> cases;
};

void write_record(const std::filesystem::path& dir, const SubmissionRecord& record);
// UserError naming the file when it is missing or a key is wrong.
SubmissionRecord read_record(const std::filesystem::path& dir);

// Writes DIR/jobs/<case>.yaml and .sh for every case, or with `array` the case configs and one
// Slurm array script (creating DIR/jobs and DIR/runs), and returns the record without job
// ids. UserError when two case ids share one file name, or `array` on another scheduler.
struct PreparedSuite {
  SubmissionRecord record;
  std::vector<std::filesystem::path> script_paths;
  std::vector<std::string> scripts;  // the text of each script: one per case, or the array's
};
PreparedSuite prepare_suite_jobs(const plan::Suite& suite, const costmodel::SiteProfile& site, Scheduler scheduler,
                                 const std::filesystem::path& dir, const std::string& exe, bool array = false);

}  // namespace sb::jobs
