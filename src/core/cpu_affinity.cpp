// SPDX-License-Identifier: Apache-2.0
// sched_getaffinity in .preinit_array; sched_setaffinity for the scope. The library is static
// (sb_library), so the entry lands in the executable, the only place the loader runs it from.
#include "core/cpu_affinity.hpp"

#include <fmt/format.h>

namespace sb {

namespace {

cpu_set_t captured_mask;
bool captured = false;

void capture_start_affinity(int, char**, char**) {
  CPU_ZERO(&captured_mask);
  captured = sched_getaffinity(0, sizeof captured_mask, &captured_mask) == 0;
}

// Runs before every shared library's constructor: libgomp's binds the main thread when
// OMP_PROC_BIND is set, and the mask it leaves is one core.
[[gnu::section(".preinit_array"), gnu::used]] void (*const capture_at_start)(int, char**, char**) =
    capture_start_affinity;

}  // namespace

const cpu_set_t& start_affinity() {
  if (!captured) capture_start_affinity(0, nullptr, nullptr);  // not an executable's own object
  return captured_mask;
}

int start_cpu_count() {
  const int count = CPU_COUNT(&start_affinity());
  return count > 0 ? count : 1;
}

int current_cpu_count() {
  cpu_set_t now;
  CPU_ZERO(&now);
  if (sched_getaffinity(0, sizeof now, &now) != 0) return start_cpu_count();
  const int count = CPU_COUNT(&now);
  return count > 0 ? count : 1;
}

std::string cpu_list(const cpu_set_t& cpus) {
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &cpus)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &cpus)) ++last;
    if (!list.empty()) list += ',';
    list += last == cpu ? fmt::format("{}", cpu) : fmt::format("{}-{}", cpu, last);
    cpu = last;
  }
  return list;
}

StartAffinityScope::StartAffinityScope() {
  CPU_ZERO(&saved_);
  if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
  restore_ = sched_setaffinity(0, sizeof(cpu_set_t), &start_affinity()) == 0;
}

StartAffinityScope::~StartAffinityScope() {
  if (restore_) sched_setaffinity(0, sizeof saved_, &saved_);
}

}  // namespace sb
