// SPDX-License-Identifier: Apache-2.0
// keep_freed_heap_for_reuse: glibc's malloc keeps freed memory at the top of each arena for the
// next allocation instead of handing it back to the kernel at once. Leaves out any other
// allocator tuning.
#pragma once

namespace sb {

// Sets glibc's M_TOP_PAD to 64 MiB for the whole process, once (later calls do nothing; no-op
// without glibc). For loops that simulate thousands of training steps on several threads, each
// allocating and freeing the same few MiB: without it every round trip returns the arena's top
// to the kernel and faults its pages in again (`predict --fit megatron-lm-narayanan2021-table1`
// on a 2-core AMD EPYC: 21.7 s, 7.5 s of it in the kernel; with it 9.7-10.1 s, 0.1 s).
void keep_freed_heap_for_reuse();

}  // namespace sb
