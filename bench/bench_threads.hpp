// SPDX-License-Identifier: Apache-2.0
// The thread count a benchmark binary runs with: SB_THREADS (default 1), checked. Leaves out
// the runtime itself (runtime/parallel_runtime.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace sb::bench {

// SB_THREADS as a positive count; a malformed value ends `program` with status 2 and a message.
inline int threads_from_environment(const char* program) {
  const char* text = std::getenv("SB_THREADS");
  if (!text || !*text) return 1;
  char* end = nullptr;
  const long threads = std::strtol(text, &end, 10);
  if (*end != '\0' || threads < 1 || threads > 4096) {
    std::fprintf(stderr, "%s: SB_THREADS='%s' is not a thread count (1, 2, ...)\n", program, text);
    std::exit(2);
  }
  return static_cast<int>(threads);
}

}  // namespace sb::bench
