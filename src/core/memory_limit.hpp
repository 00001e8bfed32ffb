// SPDX-License-Identifier: Apache-2.0
// How much memory this process may still use, and where that figure came from: on the host
// the cgroup's limit (v2 memory.max, v1 memory.limit_in_bytes) or /proc/meminfo's
// MemAvailable, whichever is smaller; on a GPU the device's free memory. Leaves out what a run
// needs (the cost model predicts it; src/train compares the two).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.hpp"

namespace sb {

struct MemoryLimit {
  double bytes = 0;    // 0: unknown (nothing could be read)
  std::string source;  // e.g. "/sys/fs/cgroup/memory.max", "MemAvailable in /proc/meminfo"
};

// The host memory this process may use.
MemoryLimit host_memory_limit();

// The memory `device` has free for this process: host_memory_limit() on cpu, cudaMemGetInfo's
// free bytes on cuda (UserError "not compiled: cuda" in a build without it).
MemoryLimit free_memory_on(Device device);

}  // namespace sb
