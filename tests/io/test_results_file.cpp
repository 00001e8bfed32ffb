// SPDX-License-Identifier: Apache-2.0
// Writer round trip through the reader, the status protocol, appending to existing files,
// refusals (duplicate run, foreign file) and a writer killed mid-run. Leaves out inspect text.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "example_run.hpp"
#include "io/results_file.hpp"
#include "io/results_reader.hpp"

namespace sb::io {
namespace {

using testing::example_collectives;
using testing::example_evals;
using testing::example_memory;
using testing::example_ranks;
using testing::example_timeline;
using testing::example_run_attributes;
using testing::example_step;
using testing::ScratchFile;

// Every HDF5 object this process opened is closed again (ids are not leaked).
void expect_no_open_hdf5_objects() {
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

void expect_same(const std::vector<double>& actual, const std::vector<double>& expected,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " row " << i;
    } else {
      EXPECT_EQ(actual[i], expected[i]) << what << " row " << i;
    }
  }
}

template <class Row, class Member>
std::vector<double> column_of(const std::vector<Row>& rows, Member Row::*member) {
  std::vector<double> values;
  for (const Row& row : rows) values.push_back(static_cast<double>(row.*member));
  return values;
}

TEST(ResultsFile, RoundTripsEveryField) {
  const ScratchFile scratch("round_trip");
  const auto& path = scratch.path();
  std::vector<StepRow> steps;
  for (std::int64_t s = 0; s < 5; ++s) steps.push_back(example_step(s));
  {
    ResultsFile file = ResultsFile::create(path);
    RunWriter run = file.begin_run("gpt-nano-dp2", example_run_attributes());
    for (const StepRow& row : steps) run.append_step(row);
    for (const EvalRow& row : example_evals()) run.append_eval(row);
    run.write_memory(example_memory());
    run.write_ranks(example_ranks());
    const auto timeline = example_timeline();
    run.append_timeline(std::span(timeline).first(2));
    run.append_timeline(std::span(timeline).subspan(2));
    run.write_collectives(example_collectives());
    run.write_context({{"hostnames", std::string("node1")}, {"cores", std::int64_t{2}},
                       {"cpu_model", std::string("Test CPU")}});
    run.write_summary({{"step_time_median_s", 0.012}, {"mfu", 0.25}});
    run.write_prediction({{"step_time_s", 0.011}, {"error_step_time_pct", 9.1}});
    run.finish("ok", "");
  }
  expect_no_open_hdf5_objects();

  EXPECT_EQ(read_number_attribute(path, "/", "schema_version"), 1.0);
  EXPECT_EQ(read_string_attribute(path, "/", "generator"), generator_string());
  EXPECT_EQ(list_runs(path), std::vector<std::string>{"gpt-nano-dp2"});

  const std::string run = "/runs/gpt-nano-dp2";
  for (const auto& [name, value] : example_run_attributes()) {
    EXPECT_EQ(read_attribute(path, run, name), value) << name;
  }
  EXPECT_EQ(read_string_attribute(path, run, "status"), "ok");
  EXPECT_EQ(read_string_attribute(path, run, "error"), "");
  EXPECT_EQ(read_string_attribute(path, run, "finished_utc").size(), 20u);

  const std::string t = run + "/steps";
  EXPECT_EQ(list_fields(path, t),
            (std::vector<std::string>{"step", "loss", "lr", "grad_norm", "loss_scale",
                                      "step_time_s", "compute_s", "comm_s", "bubble_s",
                                      "optimizer_s", "samples", "tokens", "flops"}));
  expect_same(read_column(path, t, "step"), column_of(steps, &StepRow::step), "step");
  expect_same(read_column(path, t, "loss"), column_of(steps, &StepRow::loss), "loss");
  expect_same(read_column(path, t, "lr"), column_of(steps, &StepRow::lr), "lr");
  expect_same(read_column(path, t, "grad_norm"), column_of(steps, &StepRow::grad_norm), "grad_norm");
  expect_same(read_column(path, t, "loss_scale"), column_of(steps, &StepRow::loss_scale), "scale");
  expect_same(read_column(path, t, "step_time_s"), column_of(steps, &StepRow::step_time_s), "time");
  expect_same(read_column(path, t, "compute_s"), column_of(steps, &StepRow::compute_s), "compute");
  expect_same(read_column(path, t, "comm_s"), column_of(steps, &StepRow::comm_s), "comm");
  expect_same(read_column(path, t, "bubble_s"), column_of(steps, &StepRow::bubble_s), "bubble");
  expect_same(read_column(path, t, "optimizer_s"), column_of(steps, &StepRow::optimizer_s), "opt");
  expect_same(read_column(path, t, "samples"), column_of(steps, &StepRow::samples), "samples");
  expect_same(read_column(path, t, "tokens"), column_of(steps, &StepRow::tokens), "tokens");
  expect_same(read_column(path, t, "flops"), column_of(steps, &StepRow::flops), "flops");

  const auto evals = example_evals();
  const std::string e = run + "/eval";
  EXPECT_EQ(list_fields(path, e), (std::vector<std::string>{"step", "split", "loss", "accuracy"}));
  expect_same(read_column(path, e, "step"), column_of(evals, &EvalRow::step), "eval step");
  expect_same(read_column(path, e, "loss"), column_of(evals, &EvalRow::loss), "eval loss");
  expect_same(read_column(path, e, "accuracy"), column_of(evals, &EvalRow::accuracy), "accuracy");
  EXPECT_EQ(read_string_column(path, e, "split"),
            (std::vector<std::string>{"train", "heldout", "heldout", "test"}));

  const auto memory = example_memory();
  const std::string m = run + "/memory";
  EXPECT_EQ(list_fields(path, m),
            (std::vector<std::string>{"rank", "params", "grads", "optimizer", "activations",
                                      "workspace", "comm", "peak_tracked", "peak_rss"}));
  expect_same(read_column(path, m, "rank"), column_of(memory, &MemoryRow::rank), "rank");
  expect_same(read_column(path, m, "params"), column_of(memory, &MemoryRow::params), "params");
  expect_same(read_column(path, m, "grads"), column_of(memory, &MemoryRow::grads), "grads");
  expect_same(read_column(path, m, "optimizer"), column_of(memory, &MemoryRow::optimizer), "opt");
  expect_same(read_column(path, m, "activations"), column_of(memory, &MemoryRow::activations), "act");
  expect_same(read_column(path, m, "workspace"), column_of(memory, &MemoryRow::workspace), "ws");
  expect_same(read_column(path, m, "comm"), column_of(memory, &MemoryRow::comm), "comm");
  expect_same(read_column(path, m, "peak_tracked"), column_of(memory, &MemoryRow::peak_tracked), "pk");
  expect_same(read_column(path, m, "peak_rss"), column_of(memory, &MemoryRow::peak_rss), "rss");

  const auto ranks = example_ranks();
  const std::string r = run + "/ranks";
  EXPECT_EQ(list_fields(path, r),
            (std::vector<std::string>{"rank", "dp_rank", "tp_rank", "pp_rank", "step_time_s",
                                      "compute_s", "comm_s", "bubble_s", "idle_s"}));
  expect_same(read_column(path, r, "rank"), column_of(ranks, &RankRow::rank), "rank");
  expect_same(read_column(path, r, "dp_rank"), column_of(ranks, &RankRow::dp_rank), "dp");
  expect_same(read_column(path, r, "tp_rank"), column_of(ranks, &RankRow::tp_rank), "tp");
  expect_same(read_column(path, r, "pp_rank"), column_of(ranks, &RankRow::pp_rank), "pp");
  expect_same(read_column(path, r, "step_time_s"), column_of(ranks, &RankRow::step_time_s), "t");
  expect_same(read_column(path, r, "compute_s"), column_of(ranks, &RankRow::compute_s), "c");
  expect_same(read_column(path, r, "comm_s"), column_of(ranks, &RankRow::comm_s), "m");
  expect_same(read_column(path, r, "bubble_s"), column_of(ranks, &RankRow::bubble_s), "b");
  expect_same(read_column(path, r, "idle_s"), column_of(ranks, &RankRow::idle_s), "i");

  const auto timeline = example_timeline();
  const std::string tl = run + "/timeline";
  EXPECT_EQ(list_fields(path, tl),
            (std::vector<std::string>{"step", "rank", "step_time_s", "compute_s", "tp_comm_s", "p2p_s",
                                      "bubble_s", "dp_comm_s", "optimizer_s", "compute_cpu_s"}));
  expect_same(read_column(path, tl, "step"), column_of(timeline, &TimelineRow::step), "tl step");
  expect_same(read_column(path, tl, "rank"), column_of(timeline, &TimelineRow::rank), "tl rank");
  expect_same(read_column(path, tl, "step_time_s"), column_of(timeline, &TimelineRow::step_time_s), "tl t");
  expect_same(read_column(path, tl, "compute_s"), column_of(timeline, &TimelineRow::compute_s), "tl c");
  expect_same(read_column(path, tl, "tp_comm_s"), column_of(timeline, &TimelineRow::tp_comm_s), "tl tp");
  expect_same(read_column(path, tl, "p2p_s"), column_of(timeline, &TimelineRow::p2p_s), "tl p2p");
  expect_same(read_column(path, tl, "bubble_s"), column_of(timeline, &TimelineRow::bubble_s), "tl b");
  expect_same(read_column(path, tl, "dp_comm_s"), column_of(timeline, &TimelineRow::dp_comm_s), "tl dp");
  expect_same(read_column(path, tl, "optimizer_s"), column_of(timeline, &TimelineRow::optimizer_s), "tl o");
  expect_same(read_column(path, tl, "compute_cpu_s"), column_of(timeline, &TimelineRow::compute_cpu_s), "tl cpu");

  const auto collectives = example_collectives();
  const std::string co = run + "/collectives";
  EXPECT_EQ(list_fields(path, co),
            (std::vector<std::string>{"step", "rank", "group", "group_root", "index", "collective", "bytes", "blocking",
                                      "arrive_s", "compute_before_s", "wait_s", "seconds"}));
  EXPECT_EQ(read_string_column(path, co, "group"), (std::vector<std::string>(4, "dp")));
  EXPECT_EQ(read_string_column(path, co, "collective"), (std::vector<std::string>(4, "all_reduce")));
  expect_same(read_column(path, co, "rank"), column_of(collectives, &CollectiveRow::rank), "co rank");
  expect_same(read_column(path, co, "index"), column_of(collectives, &CollectiveRow::index), "co index");
  expect_same(read_column(path, co, "bytes"), column_of(collectives, &CollectiveRow::bytes), "co bytes");
  expect_same(read_column(path, co, "blocking"), column_of(collectives, &CollectiveRow::blocking), "co blocking");
  expect_same(read_column(path, co, "arrive_s"), column_of(collectives, &CollectiveRow::arrive_s), "co arrive");
  expect_same(read_column(path, co, "compute_before_s"), column_of(collectives, &CollectiveRow::compute_before_s),
              "co compute");
  expect_same(read_column(path, co, "wait_s"), column_of(collectives, &CollectiveRow::wait_s), "co wait");
  expect_same(read_column(path, co, "seconds"), column_of(collectives, &CollectiveRow::seconds), "co seconds");

  EXPECT_EQ(read_attributes(path, run + "/context"),
            (Attributes{{"hostnames", std::string("node1")}, {"cores", std::int64_t{2}},
                        {"cpu_model", std::string("Test CPU")}}));
  EXPECT_EQ(read_attributes(path, run + "/summary"),
            (Attributes{{"step_time_median_s", 0.012}, {"mfu", 0.25}}));
  EXPECT_EQ(read_number_attribute(path, run + "/prediction", "error_step_time_pct"), 9.1);
  expect_no_open_hdf5_objects();
}

TEST(ResultsFile, StatusIsInterruptedUntilFinished) {
  const ScratchFile scratch("status");
  const auto& path = scratch.path();
  ResultsFile file = ResultsFile::create(path);
  RunWriter run = file.begin_run("a", example_run_attributes());
  run.append_step(example_step(0));
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "status"), "interrupted");
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "finished_utc"), "");
  run.finish("ok", "");
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "status"), "ok");
  run.finish("failed", "rank 1 on node2: loss is NaN at step 7");
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "status"), "failed");
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "error"),
            "rank 1 on node2: loss is NaN at step 7");
  EXPECT_THROW(run.finish("done", ""), Error);
}

TEST(ResultsFile, WriteMemoryReplacesTheTable) {
  const ScratchFile scratch("memory_replace");
  const auto& path = scratch.path();
  ResultsFile file = ResultsFile::create(path);
  RunWriter run = file.begin_run("a", example_run_attributes());
  run.write_memory(example_memory());
  run.write_memory(std::vector<MemoryRow>{example_memory()[1]});
  run.flush();
  EXPECT_EQ(read_column(path, "/runs/a/memory", "rank"), std::vector<double>{1.0});
}

TEST(ResultsFile, SameRunIdTwiceIsAUserError) {
  const ScratchFile scratch("duplicate");
  const auto& path = scratch.path();
  {
    ResultsFile file = ResultsFile::create(path);
    RunWriter run = file.begin_run("a", example_run_attributes());
    EXPECT_THROW(file.begin_run("a", example_run_attributes()), UserError);
  }
  {
    ResultsFile reopened = ResultsFile::open_or_create(path);
    EXPECT_THROW(reopened.begin_run("a", example_run_attributes()), UserError);
    EXPECT_THROW(reopened.begin_run("a/b", example_run_attributes()), UserError);
    EXPECT_THROW(reopened.begin_run("", example_run_attributes()), UserError);
  }
  expect_no_open_hdf5_objects();  // the refusals closed what they opened
}

TEST(ResultsFile, RunWriterOutlivesItsFile) {
  const ScratchFile scratch("outlives");
  const auto& path = scratch.path();
  std::optional<RunWriter> run;
  {
    ResultsFile file = ResultsFile::create(path);
    run.emplace(file.begin_run("a", example_run_attributes()));
  }
  run->append_step(example_step(0));
  run->finish("ok", "");
  run.reset();
  expect_no_open_hdf5_objects();
  EXPECT_EQ(read_column(path, "/runs/a/steps", "step"), std::vector<double>{0.0});
  EXPECT_EQ(read_string_attribute(path, "/runs/a", "status"), "ok");
}

TEST(ResultsFile, OpenOrCreateAppendsRuns) {
  const ScratchFile scratch("append");
  const auto& path = scratch.path();
  ResultsFile::open_or_create(path).begin_run("first", example_run_attributes()).finish("ok", "");
  ResultsFile::open_or_create(path).begin_run("second", example_run_attributes()).finish("ok", "");
  EXPECT_EQ(list_runs(path), (std::vector<std::string>{"first", "second"}));
  expect_no_open_hdf5_objects();
}

TEST(ResultsFile, OpenOrCreateRefusesForeignFiles) {
  const ScratchFile plain_file("plain_hdf5");
  const auto& plain = plain_file.path();
  H5Fclose(H5Fcreate(plain.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  try {
    ResultsFile::open_or_create(plain);
    FAIL() << "expected UserError";
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              plain.string() + " is not a scalebench result file (no schema_version attribute)");
  }
  const ScratchFile text_file("text");
  const auto& text = text_file.path();
  std::ofstream(text) << "step,loss\n1,2.0\n";
  EXPECT_THROW(ResultsFile::open_or_create(text), UserError);
  expect_no_open_hdf5_objects();
}

TEST(ResultsFile, CreateInAMissingFolderIsAUserError) {
  EXPECT_THROW(ResultsFile::create("/nonexistent-folder/x.h5"), UserError);
}

TEST(ResultsFile, MissingOrMistypedRunAttributesAreRefused) {
  const ScratchFile scratch("attributes");
  const auto& path = scratch.path();
  ResultsFile file = ResultsFile::create(path);
  Attributes missing = example_run_attributes();
  missing.pop_back();
  EXPECT_THROW(file.begin_run("a", missing), Error);
  Attributes mistyped = example_run_attributes();
  mistyped[5].second = std::string("2");  // dp as a string
  EXPECT_THROW(file.begin_run("a", mistyped), Error);
  Attributes owned = example_run_attributes();
  owned.emplace_back("status", std::string("ok"));
  EXPECT_THROW(file.begin_run("a", owned), Error);
  EXPECT_EQ(list_runs(path), std::vector<std::string>{});
  RunWriter run = file.begin_run("a", example_run_attributes());
  EXPECT_THROW(run.append_eval({1, "validation", 1.0, 0.5}), Error);
}

// A writer killed by SIGKILL after five flushed steps leaves a file that opens, lists the
// run as interrupted and holds the five steps.
TEST(ResultsFile, KilledWriterLeavesAReadableInterruptedRun) {
  const ScratchFile scratch("killed");
  const auto& path = scratch.path();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ResultsFile file = ResultsFile::create(path);
      RunWriter run = file.begin_run("killed", example_run_attributes());
      run.write_memory(example_memory());
      for (std::int64_t s = 0; s < 5; ++s) run.append_step(example_step(s));
      raise(SIGKILL);
    } catch (...) {
    }
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  EXPECT_EQ(list_runs(path), std::vector<std::string>{"killed"});
  EXPECT_EQ(read_string_attribute(path, "/runs/killed", "status"), "interrupted");
  EXPECT_EQ(read_column(path, "/runs/killed/steps", "step"),
            (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(read_column(path, "/runs/killed/memory", "rank"), (std::vector<double>{0, 1}));
  // and a new run can be added to it
  ResultsFile::open_or_create(path).begin_run("after", example_run_attributes()).finish("ok", "");
  EXPECT_EQ(list_runs(path), (std::vector<std::string>{"after", "killed"}));
}

}  // namespace
}  // namespace sb::io
