// SPDX-License-Identifier: Apache-2.0
// `scalebench submit SUITE --site S [--scheduler slurm|pbs|lsf|flux] [--out DIR] [--dry-run]
// [--set k=v]... [--launcher WORD]... [--time-limit MIN]`: one job script per suite case in
// DIR/jobs, submitted with sbatch/qsub/bsub/flux batch, job ids in DIR/jobs/submitted.yaml.
// --dry-run writes and prints the scripts and submits nothing; --array (Slurm) writes one job
// array for the suite instead of one job per case.
#include <filesystem>

#include "cli/commands.hpp"
#include "core/check.hpp"
#include "costmodel/site_profile.hpp"
#include "jobs/job_folder.hpp"
#include "jobs/scheduler_client.hpp"
#include "plan/suite.hpp"

namespace sb::cli {

namespace {

namespace fs = std::filesystem;

struct SubmitOptions {
  std::string suite, site, scheduler, out;
  std::vector<std::string> overrides, launcher;
  int time_limit = 0;
  bool dry_run = false, array = false;
};

}  // namespace

std::function<int()> add_submit_command(CLI::App& app) {
  auto o = std::make_shared<SubmitOptions>();
  CLI::App* cmd = app.add_subcommand("submit", "write one job script per suite case and submit them to a scheduler");
  cmd->add_option("suite", o->suite, "suite file (YAML)")->required();
  cmd->add_option("--site", o->site, "site profile: a file or a name in jobs/sites")->required();
  cmd->add_option("--scheduler", o->scheduler, "slurm, pbs, lsf or flux (default: the site's scheduler.type, else slurm)");
  cmd->add_option("--out", o->out, "folder for scripts, per-job results and the merged file (default results/<suite>)");
  cmd->add_flag("--dry-run", o->dry_run, "write and print the scripts; submit nothing");
  cmd->add_flag("--array", o->array, "one Slurm job array for the suite (its cases must share one shape)");
  cmd->add_option("--set", o->overrides, "override a key in every case: key=value (repeatable)");
  cmd->add_option("--launcher", o->launcher,
                  "replace the launcher (srun, mpiexec, mpirun, flux run): one word per option, "
                  "{ranks} {nodes} {ranks_per_node} substituted");
  cmd->add_option("--time-limit", o->time_limit, "minutes per job (default: the site's scheduler.time_limit_minutes, else 60)")
      ->check(CLI::PositiveNumber);
  return [o]() {
    const plan::Suite suite = plan::load_suite(o->suite, o->overrides);
    costmodel::SiteProfile site = costmodel::load_site_profile(costmodel::site_profile_path(o->site, "--site"));
    if (!o->launcher.empty()) site.scheduler.launcher = o->launcher;
    if (o->time_limit > 0) site.scheduler.time_limit_minutes = o->time_limit;
    const jobs::Scheduler scheduler =
        jobs::parse_scheduler(o->scheduler.empty() ? site.scheduler.type : o->scheduler, "--scheduler");
    const fs::path dir = o->out.empty() ? fs::path("results") / jobs::file_id(suite.name) : fs::path(o->out);
    SB_USER_CHECK(o->dry_run || !fs::exists(jobs::record_path(dir)),
                  "'{}' already holds a submission ({}); choose another --out or remove it", dir.string(),
                  jobs::record_path(dir).string());
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    jobs::PreparedSuite prepared = jobs::prepare_suite_jobs(suite, site, scheduler, dir, exe, o->array);
    if (o->dry_run) {
      for (std::size_t i = 0; i < prepared.scripts.size(); ++i) {
        std::printf("==> %s <==\n%s\n", prepared.script_paths[i].c_str(), prepared.scripts[i].c_str());
      }
      std::printf("dry run: %zu %s script(s) written in %s; nothing submitted\n", prepared.scripts.size(),
                  jobs::scheduler_name(scheduler), (dir / "jobs").c_str());
      return 0;
    }
    std::printf("suite %s: %zu case(s) to %s on site %s\n", suite.name.c_str(), suite.cases.size(),
                jobs::scheduler_name(scheduler), site.name.c_str());
    for (const auto& c : prepared.record.cases) fs::remove(jobs::job_files(dir, c.file_id).result);
    if (o->array) {
      const std::string id =
          jobs::submit_script(scheduler, fs::absolute(prepared.script_paths[0]),
                              fs::absolute(jobs::array_log_prefix(dir, suite.name)), "%a.out");
      for (std::size_t i = 0; i < prepared.record.cases.size(); ++i) {
        auto& c = prepared.record.cases[i];
        c.job_id = fmt::format("{}_{}", id, i);
        std::printf("  %-32s job %s\n", c.id.c_str(), c.job_id.c_str());
      }
    }
    for (auto& c : prepared.record.cases) {
      if (o->array) break;
      const auto files = jobs::job_files(dir, c.file_id);
      try {
        c.job_id = jobs::submit_script(scheduler, fs::absolute(files.script), fs::absolute(files.log));
      } catch (const UserError&) {
        jobs::write_record(dir, prepared.record);  // what was submitted before the failure
        throw;
      }
      std::printf("  %-32s job %s\n", c.id.c_str(), c.job_id.c_str());
    }
    jobs::write_record(dir, prepared.record);
    std::printf("submitted; follow with: scalebench status %s, then scalebench collect %s\n", dir.c_str(), dir.c_str());
    return 0;
  };
}

}  // namespace sb::cli
