// SPDX-License-Identifier: Apache-2.0
// `scalebench status DIR`: per case of a submitted suite, the scheduler's state of its job
// and its result file's status (missing, ok, failed, interrupted). Exit 0; the table is the
// answer; `--json` gives {"suite", "site", "scheduler", "cases": [{"id", "job_id", "job_state",
// "result", "error"}]}. Leaves out waiting (scripts poll it).
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "jobs/collect.hpp"
#include "jobs/job_folder.hpp"
#include "jobs/scheduler_client.hpp"

namespace sb::cli {

std::function<int()> add_status_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("status", "show each submitted case's job state and result status");
  cmd->add_option("dir", *dir, "the --out folder of scalebench submit")->required();
  cmd->add_flag("--json", *json, "print the cases' states as JSON");
  return [dir, json]() {
    const jobs::SubmissionRecord record = jobs::read_record(*dir);
    const jobs::Scheduler scheduler = jobs::parse_scheduler(record.scheduler, jobs::record_path(*dir).string());
    const auto results = jobs::case_results(*dir, record);
    if (*json) {
      nlohmann::json j{{"suite", record.suite}, {"site", record.site}, {"scheduler", record.scheduler},
                       {"cases", nlohmann::json::array()}};
      for (std::size_t i = 0; i < record.cases.size(); ++i) {
        const auto& c = record.cases[i];
        j["cases"].push_back({{"id", c.id}, {"job_id", c.job_id},
                              {"job_state", c.job_id.empty() ? "not submitted" : jobs::job_state(scheduler, c.job_id)},
                              {"result", results[i].status}, {"error", results[i].error}});
      }
      std::puts(j.dump(2).c_str());
      return 0;
    }
    std::printf("suite %s on %s (%s)\n%-32s %-12s %-14s %s\n", record.suite.c_str(), record.site.c_str(),
                record.scheduler.c_str(), "case", "job", "job state", "result");
    for (std::size_t i = 0; i < record.cases.size(); ++i) {
      const auto& c = record.cases[i];
      const std::string state = c.job_id.empty() ? "not submitted" : jobs::job_state(scheduler, c.job_id);
      std::string result = results[i].status;
      if (!results[i].error.empty()) result += ": " + results[i].error;
      std::printf("%-32s %-12s %-14s %s\n", c.id.c_str(), c.job_id.c_str(), state.c_str(), result.c_str());
    }
    return 0;
  };
}

}  // namespace sb::cli
