// SPDX-License-Identifier: Apache-2.0
// The CPUs a process started with survive libgomp's binding of its main thread, and a program
// started inside StartAffinityScope gets them all (what `run`, `calibrate` and the CLI tests
// rely on so that mpirun's ranks do not share the one core the parent's main thread is bound to).
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/cpu_affinity.hpp"

namespace {

// Cpus_allowed_list of a shell started now, as the kernel lists it.
std::string child_cpu_list() {
  const auto file = std::filesystem::temp_directory_path() / ("sb_child_cpus_" + std::to_string(::getpid()));
  const std::string command = "grep Cpus_allowed_list /proc/self/status | cut -f2 > " + file.string();
  EXPECT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(file);
  std::string list;
  std::getline(in, list);
  std::filesystem::remove(file);
  return list;
}

TEST(CpuAffinity, ChildrenStartedInTheScopeGetTheCpusThisProcessStartedWith) {
  const std::string started = sb::cpu_list(sb::start_affinity());
  ASSERT_FALSE(started.empty());
  cpu_set_t first;
  CPU_ZERO(&first);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &sb::start_affinity())) {
      CPU_SET(cpu, &first);
      break;
    }
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  ASSERT_EQ(sched_setaffinity(0, sizeof first, &first), 0);  // as libgomp binds the main thread
  EXPECT_EQ(child_cpu_list(), sb::cpu_list(first)) << "a child inherits the parent thread's mask";
  {
    const sb::StartAffinityScope scope;
    EXPECT_EQ(child_cpu_list(), started);
  }
  EXPECT_EQ(sb::current_cpu_count(), 1) << "the scope gives the thread its own mask back";
  sched_setaffinity(0, sizeof saved, &saved);
}

TEST(CpuAffinity, CpuListIsTheKernelsForm) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : {0, 1, 2, 3, 8, 10, 11}) CPU_SET(cpu, &cpus);
  EXPECT_EQ(sb::cpu_list(cpus), "0-3,8,10-11");
}

}  // namespace
