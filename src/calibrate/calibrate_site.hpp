// SPDX-License-Identifier: Apache-2.0
// `scalebench calibrate --site BASE --out SITE.yaml`: fit a CPU site profile on this machine.
// Times the trainer's kernels in one child process per thread count (Kokkos starts once per
// process), alone and, where a node holds several ranks of that many threads, in that many
// processes at once (the cores they share slow them, as in a data-parallel run), measures the link between two ranks with the ping-pong sweep under mpirun, and
// writes SITE.yaml (BASE's text with a new `calibrated:` section) beside SITE.kernels.csv.
// Leaves out GPU sites (their profiles come from datasheets and published runs), the kernels' timing in each
// child (calibrate/kernel_times.hpp) and the collective sweep itself (collective_sweep.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sb::calibrate {

struct SiteCalibrationOptions {
  std::string base;                     // a site name or a profile path
  std::string out;                      // SITE.yaml
  std::vector<int> threads;             // thread counts to time; empty: 1 and every core of a node
  std::vector<std::string> precisions;  // empty: fp32, bf16, fp16
  double seconds_per_call = 0.02;       // timing budget per kernel call
  std::int64_t max_batch = 0;           // largest micro-batch timed (GPT sequences, ResNet images); 0: all
  int rounds = 3;  // turns of every kernel configuration; each kernel's median turn counts
};

int calibrate_site(const SiteCalibrationOptions& options);

}  // namespace sb::calibrate
