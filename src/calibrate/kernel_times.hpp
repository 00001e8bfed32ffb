// SPDX-License-Identifier: Apache-2.0
// `scalebench calibrate --kernel-times F.csv`: the child of the site fit
// (calibrate/calibrate_site.hpp) that times the trainer's kernels in this process and writes
// their table, saying how far it got. Leaves out what is timed and how (kernel_benchmark.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sb::calibrate {

// Times every call of kernel_benchmark.hpp in this process with `threads` threads in `rounds`
// rounds and writes the CSV table; `ranks`: how many such processes run at once on the node;
// precisions empty: fp32, bf16, fp16.
int time_kernels_to_file(const std::string& csv, int threads, int ranks, const std::vector<std::string>& precisions,
                         double seconds_per_call, std::int64_t max_batch, int rounds);

}  // namespace sb::calibrate
