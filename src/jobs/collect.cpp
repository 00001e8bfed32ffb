// SPDX-License-Identifier: Apache-2.0
// Per-case status from the result files, and the merge through a temporary file and rename.
#include "jobs/collect.hpp"

#include <unistd.h>

#include "core/check.hpp"
#include "io/copy_run.hpp"
#include "io/results_reader.hpp"
#include "jobs/failed_rank_account.hpp"

namespace sb::jobs {

namespace fs = std::filesystem;

std::vector<CaseResult> case_results(const fs::path& dir, const SubmissionRecord& record) {
  std::vector<CaseResult> results;
  for (const auto& c : record.cases) {
    CaseResult r{c.id, "missing", ""};
    const JobFiles files = job_files(dir, c.file_id);
    const fs::path& file = files.result;
    if (fs::exists(file)) {
      try {
        const std::string run = "/runs/" + c.id;
        // a rank killed outright (srun: "task 1: Killed") leaves its run unfinished or failed
        // in words that cannot name it: the job's log says which rank, on which node
        if (io::read_string_attribute(file, run, "status") != "ok" && !record.array)
          record_failed_rank(file, c.id, log_tail(files.log),
                             fmt::format("before the run finished (the job's log {} says so)", files.log.string()),
                             true);
        r.status = io::read_string_attribute(file, run, "status");
        if (r.status != "ok") r.error = io::read_string_attribute(file, run, "error");
      } catch (const std::exception& e) {
        r.status = fmt::format("unreadable ({})", e.what());
      }
    }
    results.push_back(r);
  }
  return results;
}

CollectOutcome collect_suite(const fs::path& dir, const SubmissionRecord& record, bool partial) {
  CollectOutcome outcome;
  outcome.cases = case_results(dir, record);
  outcome.suite_file = suite_result_path(dir, record.suite);
  bool all_ok = true;
  int readable = 0;
  for (const auto& r : outcome.cases) {
    all_ok = all_ok && r.status == "ok";
    readable += r.status == "ok" || r.status == "failed" || r.status == "interrupted";
  }
  if (!(all_ok || (partial && readable > 0))) return outcome;
  const fs::path temporary = dir / fmt::format(".{}.collect-{}.h5", outcome.suite_file.filename().string(), getpid());
  fs::remove(temporary);
  try {
    for (std::size_t i = 0; i < record.cases.size(); ++i) {
      const auto& r = outcome.cases[i];
      if (r.status != "ok" && r.status != "failed" && r.status != "interrupted") continue;
      io::copy_run(job_files(dir, record.cases[i].file_id).result, temporary, record.cases[i].id);
      ++outcome.merged;
    }
    fs::rename(temporary, outcome.suite_file);  // atomic within one folder
  } catch (...) {
    fs::remove(temporary);
    throw;
  }
  outcome.written = true;
  return outcome;
}

}  // namespace sb::jobs
