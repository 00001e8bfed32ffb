// SPDX-License-Identifier: Apache-2.0
// Threads from the allocation, read back from the run's context: under `taskset -c <one CPU>`
// a run records 1 thread from its affinity mask, and two ranks on that CPU record that they
// oversubscribe it, in the context and in the run's id; the log mpirun leaves in a file has
// plain lines (no carriage return, no escape code) and no Kokkos warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cli_harness.hpp"
#include "core/cpu_affinity.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

std::string first_cpu() {
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &start_affinity())) return std::to_string(cpu);
  return "0";
}

const std::string kTrain = "train --config " + std::string(SB_SOURCE_DIR) +
                           "/models/gpt/configs/gpt-nano-sotu.yaml --set steps=3 --set eval_batches=1 --out ";
// No variable that states a thread count: the mask decides.
const std::string kNoThreadVariables = "env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK ";

TEST(ThreadAllocation, OneCpuMaskRecordsOneThreadFromTheAffinity) {
  Scratch scratch;
  const auto out = scratch.path("one.h5");
  const CommandResult r = scratch.run_under(kNoThreadVariables + "taskset -c " + first_cpu(), kTrain + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(io::list_runs(out), std::vector<std::string>{"gpt-nano"});
  const io::Attributes context = io::read_attributes(out, "/runs/gpt-nano/context");
  const auto value = [&](const std::string& key) {
    for (const auto& [k, v] : context)
      if (k == key) return io::to_string(v);
    return std::string("(missing)");
  };
  EXPECT_EQ(value("threads"), "1");
  EXPECT_EQ(value("threads_source"), "affinity");
  EXPECT_EQ(value("cpus_allowed"), "1");
  EXPECT_EQ(value("cpus_allowed_list"), first_cpu());
  EXPECT_EQ(value("oversubscribed"), "0");
}

TEST(ThreadAllocation, TwoRanksOnOneCpuSayTheyOversubscribeAndLogPlainLines) {
  Scratch scratch;
  const auto out = scratch.path("two.h5");
  const std::string launcher = kNoThreadVariables + SB_MPIEXEC + " --oversubscribe --bind-to none -np 2 taskset -c " +
                               first_cpu();
  const CommandResult r = scratch.run_under(launcher, kTrain + out.string() + " --set strategy.dp=2 --set threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ASSERT_EQ(io::list_runs(out), std::vector<std::string>{"gpt-nano-oversubscribed"});
  const io::Attributes context = io::read_attributes(out, "/runs/gpt-nano-oversubscribed/context");
  bool said = false;
  for (const auto& [k, v] : context)
    if (k == "oversubscribed") said = io::to_string(v) == "1";
  EXPECT_TRUE(said);
  EXPECT_NE(r.stderr_text.find("oversubscribes"), std::string::npos) << r.stderr_text;
  // the log as a job script leaves it: stdout to a file through mpirun's pseudo-terminals
  const std::string log = r.stdout_text + r.stderr_text;
  EXPECT_NE(log.find("step 3/3"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\r'), 0) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\033'), 0) << log;
  EXPECT_EQ(log.find("OMP_PROC_BIND environment variable not set"), std::string::npos) << log;
}

}  // namespace
}  // namespace sb::testing
