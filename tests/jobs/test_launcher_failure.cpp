// SPDX-License-Identifier: Apache-2.0
// Reading which rank a launcher says ended a job: Open MPI 4.1's mpirun (the two reports it
// prints, as captured from its output here) and Slurm's srun.
#include <gtest/gtest.h>

#include "launch/launcher_failure.hpp"

namespace sb::launch {
namespace {

TEST(LauncherFailure, OpenMpiRankEndedBySignal) {
  const auto f = launcher_failure(
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "mpirun noticed that process rank 1 with PID 8658 on node 10.201.0.2 exited on signal 9 (Killed).\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 1);
  EXPECT_EQ(f->node, "10.201.0.2");
  EXPECT_EQ(f->how, "signal 9 (Killed)");
  EXPECT_EQ(describe(*f, "sb-node-b"),
            "rank 1 on host sb-node-b (the launcher's node 10.201.0.2) ended abnormally (signal 9 (Killed))");
  EXPECT_EQ(describe(*f, ""), "rank 1 on host 10.201.0.2 ended abnormally (signal 9 (Killed))");
}

TEST(LauncherFailure, OpenMpiFirstRankThatExitedNonZero) {
  const auto f = launcher_failure(
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[37203,1],3]\n"
      "  Exit code:    2\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 3);
  EXPECT_EQ(f->node, "");
  EXPECT_EQ(f->how, "exit code 2");
  EXPECT_EQ(describe(*f, "n7"), "rank 3 on host n7 ended abnormally (exit code 2)");
}

TEST(LauncherFailure, SrunTaskKilledOrExited) {
  auto f = launcher_failure("srun: error: nid001234: task 5: Killed\nsrun: Terminating StepId=12.0\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 5);
  EXPECT_EQ(f->node, "nid001234");
  EXPECT_EQ(f->how, "Killed");
  f = launcher_failure("srun: error: n2: tasks 4-7: Exited with exit code 3\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 4);
  EXPECT_EQ(f->how, "Exited with exit code 3");
}

TEST(LauncherFailure, NothingNamedIsNoAccount) {
  EXPECT_FALSE(launcher_failure("").has_value());
  EXPECT_FALSE(launcher_failure("[gpt-nano] step 3/400 | loss 5.1\nscalebench: error: x\n").has_value());
  // a rank number no world has is not taken for one
  const auto f = launcher_failure("process rank 99999999999999 with PID 1 on node n exited on signal 9 (Killed)");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, -1);
  EXPECT_EQ(describe(*f, ""), "a rank on host n ended abnormally (signal 9 (Killed))");
}

}  // namespace
}  // namespace sb::launch
