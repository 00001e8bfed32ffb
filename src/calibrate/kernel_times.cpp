// SPDX-License-Identifier: Apache-2.0
// The kernel-times child of the site fit (see kernel_times.hpp).
#include "calibrate/kernel_times.hpp"

#include <algorithm>
#include <cstdio>

#include "calibrate/backward_page_refault.hpp"
#include "calibrate/kernel_benchmark.hpp"
#include "calibrate/page_refault.hpp"
#include "costmodel/kernel_profile.hpp"
#include "runtime/parallel_runtime.hpp"

namespace sb::calibrate {

using costmodel::KernelProfile;
using costmodel::KernelTime;

namespace {

// ZeRO-2/3 and 16-bit main gradients give gradient pages back and fault them in again in every
// backward, on every rank of the node at once: timed here beside the kernels, with as many
// processes faulting at once as `ranks`, one row per precision (its GEMMs fault the pages in).
// The figure is the cost inside a backward (backward_page_refault.hpp), never below that of a
// loop that only gives pages back and touches them (page_refault.hpp): the faults' own work.
// Stored as the seconds for 64 MiB, the row's size since it was first written.
void add_page_refault(KernelProfile& profile, const std::vector<std::string>& precisions, int threads, int ranks) {
  const PageRefault loop = measure_page_refault();
  const double loop_per_byte = loop.seconds_per_page / static_cast<double>(loop.page_bytes);
  constexpr std::int64_t kRowBytes = 64LL << 20;
  for (const std::string& precision : precisions.empty() ? std::vector<std::string>{"fp32", "bf16", "fp16"} : precisions) {
    const BackwardPageRefault in_backward = measure_backward_page_refault(precision);
    const double per_byte = std::max(in_backward.seconds_per_byte, loop_per_byte);
    std::printf("calibrate: %s gradient pages given back and faulted in again: %.3g us per 4 KiB inside gpt-tiny's "
                "backward (%.2f against %.2f ms resident, %d passes each), %.3g us in a loop that only touches them; "
                "%.3g us priced\n",
                precision.c_str(), in_backward.seconds_per_byte * 4096e6, in_backward.given_back_backward_s * 1e3,
                in_backward.resident_backward_s * 1e3, in_backward.passes, loop_per_byte * 4096e6,
                per_byte * 4096e6);
    std::fflush(stdout);
    profile.add({"page_refault", precision, threads, ranks, {kRowBytes}, static_cast<double>(kRowBytes),
                 per_byte * static_cast<double>(kRowBytes)});
  }
}

}  // namespace

int time_kernels_to_file(const std::string& csv, int threads, int ranks, const std::vector<std::string>& precisions,
                         double seconds_per_call, std::int64_t max_batch, int rounds) {
  ParallelRuntime runtime(threads);
  KernelProfile profile;
  for (const std::string& precision : precisions.empty() ? std::vector<std::string>{"fp32", "bf16", "fp16"} : precisions) {
    const std::vector<KernelSequence> sequences = sequences_to_calibrate(precision, max_batch);
    std::size_t last_percent = 0;
    for (KernelTime& t : time_kernel_sequences(sequences, precision, threads, ranks, seconds_per_call, rounds,
                                           [&](std::size_t done, std::size_t total) {
                                             const std::size_t percent = 100 * done / total;
                                             if (percent >= last_percent + 25 || done == total) {
                                               std::printf("calibrate: %s on %d thread(s), %d rank(s) at once: %zu of %zu "
                                                           "kernel calls timed in their micro-batch (%d round(s))\n",
                                                           precision.c_str(), threads, ranks, done, total, rounds);
                                               std::fflush(stdout);
                                               last_percent = percent;
                                             }
                                           }))
      profile.add(std::move(t));
  }
  add_page_refault(profile, precisions, threads, ranks);
  profile.save(csv);
  return 0;
}

}  // namespace sb::calibrate
