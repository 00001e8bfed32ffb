// SPDX-License-Identifier: Apache-2.0
// `scalebench collect DIR [--partial]`: merges every per-job result file of a submitted suite
// into DIR/<suite>.h5 (temporary file, then rename). Missing or failed cases are listed and
// the exit is 1, with nothing written, unless --partial.
#include "cli/commands.hpp"
#include "jobs/collect.hpp"
#include "jobs/job_folder.hpp"

namespace sb::cli {

std::function<int()> add_collect_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto partial = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("collect", "merge the per-job result files of a submitted suite");
  cmd->add_option("dir", *dir, "the --out folder of scalebench submit")->required();
  cmd->add_flag("--partial", *partial, "merge what is there even when cases are missing or failed");
  return [dir, partial]() {
    const jobs::SubmissionRecord record = jobs::read_record(*dir);
    const jobs::CollectOutcome outcome = jobs::collect_suite(*dir, record, *partial);
    int incomplete = 0;
    for (const auto& r : outcome.cases) {
      if (r.status == "ok") continue;
      ++incomplete;
      std::fprintf(stderr, "scalebench: case '%s' is %s%s%s\n", r.id.c_str(), r.status.c_str(),
                   r.error.empty() ? "" : ": ", r.error.c_str());
    }
    if (outcome.written)
      std::printf("%d of %zu run(s) merged into %s\n", outcome.merged, record.cases.size(), outcome.suite_file.c_str());
    else
      std::fprintf(stderr, "scalebench: %d of %zu case(s) missing or not ok; %s not written (--partial merges the rest)\n",
                   incomplete, record.cases.size(), outcome.suite_file.c_str());
    return incomplete == 0 || (*partial && outcome.written) ? 0 : 1;
  };
}

}  // namespace sb::cli
