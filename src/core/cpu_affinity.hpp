// SPDX-License-Identifier: Apache-2.0
// The CPUs this process was allowed to run on when it started, before libgomp (with
// OMP_PROC_BIND set) pinned its main thread to the first place, and a scope that lends them
// to the calling thread so that a program it starts inherits them. Leaves out choosing thread
// counts (runtime/thread_allocation.hpp) and starting programs (launch/child_process.hpp).
#pragma once

#include <sched.h>

#include <string>

namespace sb {

// The affinity mask of the process at start (captured from the ELF .preinit_array, which runs
// before any shared library's initialiser, so before libgomp's).
const cpu_set_t& start_affinity();
// CPUs in start_affinity(), at least 1.
int start_cpu_count();
// CPUs the calling thread may run on now.
int current_cpu_count();
// "0-3,8": a mask in the kernel's cpu-list form (/proc/self/status Cpus_allowed_list).
std::string cpu_list(const cpu_set_t& cpus);

// While alive, the calling thread runs on start_affinity(); a child started meanwhile (fork,
// posix_spawn, std::system) inherits that mask instead of the one core libgomp bound the main
// thread to. The thread's own mask comes back when the scope ends.
class StartAffinityScope {
 public:
  StartAffinityScope();
  ~StartAffinityScope();
  StartAffinityScope(const StartAffinityScope&) = delete;
  StartAffinityScope& operator=(const StartAffinityScope&) = delete;

 private:
  cpu_set_t saved_;
  bool restore_ = false;
};

}  // namespace sb
