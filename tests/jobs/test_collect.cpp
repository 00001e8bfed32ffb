// SPDX-License-Identifier: Apache-2.0
// `collect`'s merge on real result files: every case ok gives the suite file with every run;
// a missing or failed case leaves it unwritten (an older one untouched) unless partial; no
// temporary file is left behind. Also submitted.yaml round-trips odd case ids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.hpp"
#include "io/results_reader.hpp"
#include "jobs/collect.hpp"
#include "tests/io/example_run.hpp"

namespace sb::jobs {
namespace {

namespace fs = std::filesystem;

class Collect : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("sb-collect-{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "jobs");
    fs::create_directories(dir_ / "runs");
    record_ = {"suite: \"x\"", "slurm", "site", false, {}};
    for (const std::string id : {"a", "b,dp=2", "c 'q'"}) record_.cases.push_back({id, file_id(id), "1"});
    write_record(dir_, record_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_run(std::size_t index, const std::string& status) {
    write_run(index, status, status == "ok" ? "" : "rank 1 failed: loss is NaN");
  }
  void write_run(std::size_t index, const std::string& status, const std::string& error) {
    const auto& c = record_.cases[index];
    auto file = io::ResultsFile::create(job_files(dir_, c.file_id).result);
    io::RunWriter run = file.begin_run(c.id, io::testing::example_run_attributes());
    run.append_step(io::testing::example_step(1));
    run.finish(status, error);
  }

  int files_in_dir() const {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++n;
    return n;
  }

  fs::path dir_;
  SubmissionRecord record_;
};

// srun's line in the job's log names the rank killed outright and its node: the unfinished run
// becomes failed saying so; a run whose log names no failed rank (a job still running) is left.
TEST_F(Collect, AKilledRankNamedInTheJobLogFailsItsRun) {
  write_run(0, "interrupted", "");
  write_run(1, "interrupted", "");
  write_run(2, "interrupted", "stopped by SIGUSR1 after step 3; checkpoint x.ckpt.h5 holds it");
  std::ofstream(job_files(dir_, record_.cases[2].file_id).log) << "srun: error: n1: task 0: Exited with exit code 75\n";
  std::ofstream(job_files(dir_, record_.cases[0].file_id).log)
      << "[a] step 3/400 | loss 5.1\nsrun: error: nid00042: task 1: Killed\nsrun: Terminating StepId=7.0\n";
  std::ofstream(job_files(dir_, record_.cases[1].file_id).log) << "[b] step 3/400 | loss 5.1\n";
  const std::vector<CaseResult> results = case_results(dir_, record_);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, "failed");
  EXPECT_NE(results[0].error.find("rank 1 on host nid00042 ended abnormally (Killed)"), std::string::npos)
      << results[0].error;
  EXPECT_EQ(results[1].status, "interrupted");
  EXPECT_EQ(results[2].status, "interrupted");  // left for its requeue
  EXPECT_NE(results[2].error.find("checkpoint"), std::string::npos);
}

TEST_F(Collect, RecordRoundTripsOddIds) {
  const SubmissionRecord back = read_record(dir_);
  EXPECT_EQ(back.suite, record_.suite);
  ASSERT_EQ(back.cases.size(), 3u);
  EXPECT_EQ(back.cases[2].id, "c 'q'");
  EXPECT_EQ(back.cases[2].file_id, "c__q_");
  EXPECT_EQ(back.cases[1].job_id, "1");
  EXPECT_THROW(read_record(dir_ / "nowhere"), UserError);
}

TEST_F(Collect, MissingOrFailedCasesWriteNothingUnlessPartial) {
  write_run(0, "ok");
  write_run(1, "failed");
  const fs::path suite_file = suite_result_path(dir_, record_.suite);
  std::ofstream(suite_file) << "an older file";
  const int before = files_in_dir();

  CollectOutcome outcome = collect_suite(dir_, record_, false);
  EXPECT_FALSE(outcome.written);
  EXPECT_EQ(outcome.cases[0].status, "ok");
  EXPECT_EQ(outcome.cases[1].status, "failed");
  EXPECT_EQ(outcome.cases[1].error, "rank 1 failed: loss is NaN");
  EXPECT_EQ(outcome.cases[2].status, "missing");
  EXPECT_EQ(fs::file_size(suite_file), std::string("an older file").size());

  outcome = collect_suite(dir_, record_, true);
  EXPECT_TRUE(outcome.written);
  EXPECT_EQ(outcome.merged, 2);
  EXPECT_EQ(io::list_runs(suite_file), (std::vector<std::string>{"a", "b,dp=2"}));
  EXPECT_EQ(files_in_dir(), before);  // no temporary file left

  write_run(2, "ok");
  write_run(1, "ok");
  outcome = collect_suite(dir_, record_, false);
  EXPECT_TRUE(outcome.written);
  EXPECT_EQ(outcome.merged, 3);
  for (const auto& c : record_.cases) EXPECT_EQ(io::read_string_attribute(suite_file, "/runs/" + c.id, "status"), "ok");
}

TEST_F(Collect, AFileThatIsNotAResultIsUnreadableNotACrash) {
  std::ofstream(job_files(dir_, "a").result) << "not hdf5";
  const auto results = case_results(dir_, record_);
  EXPECT_EQ(results[0].status.rfind("unreadable (", 0), 0u) << results[0].status;
}

}  // namespace
}  // namespace sb::jobs
