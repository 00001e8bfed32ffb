// SPDX-License-Identifier: Apache-2.0
// Merging the per-job result files of a submitted suite into DIR/<suite>.h5, atomically: the
// runs are copied into a temporary file in DIR, which is renamed over the suite file only when
// complete, so a reader never sees half a merge. Leaves out the scheduler (a job that has not
// written its file yet is simply missing).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "jobs/job_folder.hpp"

namespace sb::jobs {

struct CaseResult {
  std::string id;
  std::string status;  // the run's status attribute (ok|failed|interrupted), "missing" (no
                       // file) or "unreadable (...)" (not a finished scalebench file)
  std::string error;   // the run's error attribute, when failed
};

// The status of every case's result file, in record order. A run that did not finish "ok"
// whose job log (one job per case) names a failed rank is first marked failed naming that rank
// and host (failed_rank_account.hpp).
std::vector<CaseResult> case_results(const std::filesystem::path& dir, const SubmissionRecord& record);

struct CollectOutcome {
  std::vector<CaseResult> cases;
  int merged = 0;      // runs in the suite file
  bool written = false;
  std::filesystem::path suite_file;
};

// Merges every readable per-job run (ok, failed or interrupted). Writes the suite file when
// every case is `ok`, or when `partial` and at least one run is readable; otherwise leaves any
// existing suite file untouched.
CollectOutcome collect_suite(const std::filesystem::path& dir, const SubmissionRecord& record, bool partial);

}  // namespace sb::jobs
