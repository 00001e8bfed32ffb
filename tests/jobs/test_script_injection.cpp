// SPDX-License-Identifier: Apache-2.0
// No shell injection through a case name or a path: scripts written for a case named with
// $(...), backquotes and both kinds of quotes, in a folder whose name holds them too, pass
// `bash -n` and, run with `echo` as the launcher, print exactly the intended words and
// execute nothing (/tmp/sb_injected never appears). Names that no directive can hold
// (newlines) are a clear error. A site's module names are quoted like case values; its setup
// lines are its own shell text and run as written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/check.hpp"
#include "costmodel/site_profile.hpp"
#include "jobs/job_folder.hpp"
#include "jobs/process.hpp"
#include "jobs/shell_quote.hpp"
#include "plan/config.hpp"
#include "plan/suite.hpp"

namespace sb::jobs {
namespace {

namespace fs = std::filesystem;
const fs::path kMarker = "/tmp/sb_injected";
const std::string kEvilName =
    "$(touch /tmp/sb_injected) \"dq\" 'sq' `touch /tmp/sb_injected`; touch /tmp/sb_injected & $HOME";

class ScriptInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove(kMarker);
    root_ = fs::temp_directory_path() / fmt::format("sb-injection-{}", ::getpid());
    fs::remove_all(root_);
    dir_ = root_ / "out $(touch ${IFS}x) 'q' \"dq\" ;`true`";
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  plan::Suite evil_suite(const std::string& name) {
    const fs::path file = root_ / "suite.yaml";
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "suite" << YAML::Value << "evil";
    e << YAML::Key << "base" << YAML::Value << YAML::BeginMap << YAML::Key << "model" << YAML::Value << "gpt-nano"
      << YAML::Key << "data" << YAML::Value << "sotu" << YAML::EndMap;
    e << YAML::Key << "cases" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << YAML::DoubleQuoted << name << YAML::EndMap << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << "plain" << YAML::Key << "strategy" << YAML::Value << YAML::Flow << YAML::BeginMap
      << YAML::Key << "dp" << YAML::Value << 2 << YAML::EndMap << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
    std::ofstream(file) << e.c_str() << "\n";
    return plan::load_suite(file, {});
  }

  fs::path root_, dir_;
};

TEST_F(ScriptInjection, EvilCaseNameAndFolderExecuteNothing) {
  const plan::Suite suite = evil_suite(kEvilName);
  ASSERT_EQ(suite.cases[0].id, kEvilName);
  costmodel::SiteProfile site =
      costmodel::load_site_profile(fs::path(SB_SOURCE_DIR) / "jobs" / "sites" / "this-machine.yaml");
  site.scheduler.launcher = {"echo"};  // the fake launcher: prints the words it was given
  const std::string exe = "/opt/sb $(touch /tmp/sb_injected)/scalebench";
  for (const Scheduler scheduler : {Scheduler::slurm, Scheduler::pbs, Scheduler::lsf, Scheduler::flux}) {
    const PreparedSuite prepared = prepare_suite_jobs(suite, site, scheduler, dir_, exe);
    const JobFiles files = job_files(dir_, prepared.record.cases[0].file_id);
    const ProcessResult syntax = run_process({"bash", "-n", files.script.string()});
    EXPECT_EQ(syntax.exit_code, 0) << scheduler_name(scheduler) << ": " << syntax.err;
    const ProcessResult run = run_process({"bash", files.script.string()});
    EXPECT_EQ(run.exit_code, 0) << scheduler_name(scheduler) << ": " << run.err;
    const std::string expected = exe + " train --config " + fs::absolute(files.config).string() + " --out " +
                                 fs::absolute(files.result).string() + " --run-id " + kEvilName + "\n";
    EXPECT_EQ(run.out, expected) << scheduler_name(scheduler);
    EXPECT_FALSE(fs::exists(kMarker)) << scheduler_name(scheduler) << " ran an injected command";
    EXPECT_FALSE(fs::exists(dir_ / "x")) << scheduler_name(scheduler) << " ran an injected command";
    // The case config written beside the script keeps the name exactly.
    EXPECT_EQ(plan::load_yaml_file(files.config)["name"].as<std::string>(), kEvilName);
  }
}

TEST_F(ScriptInjection, NewlineInACaseNameIsAClearError) {
  const plan::Suite suite = evil_suite("two\nlines");
  const costmodel::SiteProfile site =
      costmodel::load_site_profile(fs::path(SB_SOURCE_DIR) / "jobs" / "sites" / "this-machine.yaml");
  try {
    prepare_suite_jobs(suite, site, Scheduler::slurm, dir_, "scalebench");
    FAIL() << "a newline in a case name was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("newline"), std::string::npos) << e.what();
  }
}

TEST_F(ScriptInjection, ModuleNamesAreQuotedAndSetupLinesRunAsWritten) {
  const plan::Suite suite = evil_suite("plain-case");
  costmodel::SiteProfile site =
      costmodel::load_site_profile(fs::path(SB_SOURCE_DIR) / "jobs" / "sites" / "this-machine.yaml");
  site.scheduler.launcher = {"echo"};
  // No `module` command here: a setup line defines one that prints its words, one per line.
  site.scheduler.setup = {"module() { printf '<%s>\\n' \"$@\"; }", "echo \"setup $((6 * 7)) ${SB_NO_SUCH_VAR:-unset}\""};
  site.scheduler.modules = {"gcc/12.3.0", kEvilName, "it's (default)"};
  for (const Scheduler scheduler : {Scheduler::slurm, Scheduler::pbs, Scheduler::lsf, Scheduler::flux}) {
    const PreparedSuite prepared = prepare_suite_jobs(suite, site, scheduler, dir_, "scalebench");
    const JobFiles files = job_files(dir_, prepared.record.cases[0].file_id);
    const ProcessResult run = run_process({"bash", files.script.string()});
    EXPECT_EQ(run.exit_code, 0) << scheduler_name(scheduler) << ": " << run.err;
    const std::string expected_site = "setup 42 unset\n<load>\n<gcc/12.3.0>\n<load>\n<" + kEvilName + ">\n<load>\n<it's (default)>\n";
    EXPECT_EQ(run.out.substr(0, expected_site.size()), expected_site) << scheduler_name(scheduler);
    EXPECT_NE(run.out.find("scalebench train --config"), std::string::npos) << scheduler_name(scheduler);
    EXPECT_FALSE(fs::exists(kMarker)) << scheduler_name(scheduler) << " ran an injected command";
  }
  // A failing setup line stops the job before the launch.
  site.scheduler.setup = {"false"};
  const PreparedSuite prepared = prepare_suite_jobs(suite, site, Scheduler::slurm, dir_, "scalebench");
  const ProcessResult stopped = run_process({"bash", job_files(dir_, prepared.record.cases[0].file_id).script.string()});
  EXPECT_NE(stopped.exit_code, 0);
  EXPECT_EQ(stopped.out, "");
}

TEST(ShellQuote, EveryByteSurvivesBash) {
  for (const std::string& value : {std::string("plain"), std::string(""), std::string("it's"), std::string("a'\"b"),
                                  std::string("$(touch /tmp/sb_injected)"), std::string("`id` $HOME ${X:-y} !! \\n"),
                                  std::string("line\nbreak\r\ttab"), std::string("*?[a-z] ~ # ; & | < >")}) {
    const ProcessResult r = run_process({"bash", "-c", "printf %s " + shell_quote(value)});
    EXPECT_EQ(r.exit_code, 0) << value;
    EXPECT_EQ(r.out, value);
  }
  EXPECT_FALSE(fs::exists(kMarker));
}

}  // namespace
}  // namespace sb::jobs
