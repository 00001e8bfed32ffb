// SPDX-License-Identifier: Apache-2.0
// Kokkos host-parallel building blocks shared by the cpu kernels: labelled loops over rows or
// chunks, per-thread scratch, and the runtime CPU dispatch macro. Leaves out device spaces.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <vector>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

using HostSpace = Kokkos::DefaultHostExecutionSpace;
using HostRange = Kokkos::RangePolicy<HostSpace, Kokkos::IndexType<i64>>;

// Elements per task of an elementwise kernel: large enough to amortise the call, small enough
// to balance a few hundred thousand elements over the threads.
inline constexpr i64 kElementwiseChunk = 8192;

// Hot row functions are compiled twice, for AVX2+FMA and for the baseline, and the loader
// picks one per machine (GCC function multi-versioning), so a portable build still runs
// 8-wide where the CPU allows it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SB_CPU_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SB_CPU_VECTOR_CLONES
#endif

inline void require_parallel_runtime(const char* label) {
  SB_CHECK(Kokkos::is_initialized(), "{} needs an sb::ParallelRuntime (Kokkos is not initialised)",
           label);
}

// body(i) for i in [0, count), spread over the host threads; returns when all are done.
template <class Body>
void parallel_for_each(const char* label, i64 count, const Body& body) {
  require_parallel_runtime(label);
  Kokkos::parallel_for(label, HostRange(0, count), body);
  HostSpace().fence();
}

// The same, handing out one index at a time to whichever thread is free: for a few dozen
// heavy tasks (a convolution's image groups), where a thread slowed by another process on its
// core would otherwise hold up the whole loop. Results must not depend on the thread that
// ran a task, as for parallel_for_each.
template <class Body>
void parallel_for_each_dynamic(const char* label, i64 count, const Body& body) {
  require_parallel_runtime(label);
  using DynamicRange =
      Kokkos::RangePolicy<HostSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<i64>>;
  Kokkos::parallel_for(label, DynamicRange(0, count, Kokkos::ChunkSize(1)), body);
  HostSpace().fence();
}

// body(begin, end) over [0, n) cut into chunks of `chunk`; the cut depends on n only, never on
// the thread count.
template <class Body>
void parallel_for_chunks(const char* label, i64 n, i64 chunk, const Body& body) {
  const i64 chunks = (n + chunk - 1) / chunk;
  parallel_for_each(label, chunks, [=](i64 c) { body(c * chunk, std::min(n, (c + 1) * chunk)); });
}

// body(first row, rows) over `count` rows of `width` values that lie back to back, a block of
// consecutive rows a task (about kRowBlockValues values, at least one row): for fp16 passes that
// widen their operands into the thread's cache (LayerNorm's), one conversion call per operand per
// block where a narrow row (gpt-nano's 64 values) would pay one per row. The cut depends on count
// and width only, never on the thread count.
inline constexpr i64 kRowBlockValues = 1024;
template <class Body>
void parallel_for_row_blocks(const char* label, i64 count, i64 width, const Body& body) {
  const i64 rows_per_block = std::max<i64>(1, kRowBlockValues / std::max<i64>(width, 1));
  parallel_for_chunks(label, count, rows_per_block, [=](i64 begin, i64 end) { body(begin, end - begin); });
}

// A float buffer of at least `count` elements owned by the calling thread, reused across
// calls: it only allocates when a larger size is asked for the first time.
inline float* thread_scratch(i64 count) {
  thread_local std::vector<float> scratch;
  if (static_cast<i64>(scratch.size()) < count) scratch.resize(static_cast<std::size_t>(count));
  return scratch.data();
}

}  // namespace sb::kernels::cpu
