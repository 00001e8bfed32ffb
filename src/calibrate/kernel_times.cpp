// SPDX-License-Identifier: Apache-2.0
// The kernel-times child of the site fit (see kernel_times.hpp).
#include "calibrate/kernel_times.hpp"

#include <cstdio>

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
// processes faulting at once as `ranks`, as one row per precision (the cost is the same in
// each; the rows let a prediction look it up as it looks up the kernels).
void add_page_refault(KernelProfile& profile, const std::vector<std::string>& precisions, int threads, int ranks) {
  const PageRefault refault = measure_page_refault();
  const double bytes = static_cast<double>(refault.pages * refault.page_bytes);
  for (const std::string& precision : precisions.empty() ? std::vector<std::string>{"fp32", "bf16", "fp16"} : precisions)
    profile.add({"page_refault", precision, threads, ranks, {refault.pages * refault.page_bytes}, bytes,
                 refault.seconds_per_page * static_cast<double>(refault.pages)});
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
