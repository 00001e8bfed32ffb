// SPDX-License-Identifier: Apache-2.0
// Timing the trainer's kernels for `calibrate`: each reference model's micro-batch (gpt-nano and
// gpt-tiny at a range of micro-batches and tp sizes, resnet-mini at a range of images) run by the
// model itself on the cpu back-end in each precision, every kernel call timed as the model makes
// it (a kernels::KernelRecorder's hooks); the optimizer's per-parameter calls at a range of sizes
// through the optim classes; fills. In this process's threads. Leaves out starting one process
// per thread count (command_calibrate.cpp) and the CUDA back-end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "costmodel/kernel_calls.hpp"
#include "costmodel/kernel_profile.hpp"

namespace sb::calibrate {

// One stretch of the trainer's calls, timed in its order: a micro-batch of one model, tp and
// size (its forward, then its backward); an optimizer step; fills.
struct KernelSequence {
  enum class Source {
    gpt_micro_batch,     // GptModelT, tp rank 0 of `tp`, `batch` sequences of the config's length
    resnet_micro_batch,  // ResnetModelT, `batch` images
    step_calls,          // `calls` one by one: the optimizer's and fills (costmodel::optimizer_kernel_calls)
  };
  Source source = Source::step_calls;
  std::string model;  // the named config of a micro-batch
  std::int64_t tp = 1, batch = 0;
  // The calls it makes in order: a micro-batch's as recorded from its model
  // (costmodel/kernel_calls.hpp), the same the cost model times.
  std::vector<costmodel::KernelCall> calls;
};

// What to time in `precision`: one micro-batch of gpt-nano and gpt-tiny at micro-batches 1..32
// and tp 1, 2, 4, and of resnet-mini at 4..128 images; the optimizer's calls at 1e4..1e7
// parameters; fills of 1 KiB..64 MiB. max_batch > 0 leaves out GPT micro-batches and ResNet
// image counts above it (ResNet keeps its smallest, 4).
std::vector<KernelSequence> sequences_to_calibrate(const std::string& precision, std::int64_t max_batch = 0);

// Each call's figure from the passes of one micro-batch, seconds_by_call[call][pass]: its median
// over the passes, the medians scaled together so that they add up to the median of the whole
// passes. A step's time is a sum of hundreds of calls, so its noise averages out and it lies
// near the sum of the calls' means; each call's own noise is skewed (a call is never faster than
// its work, often slower), so a sum of medians falls short of it: 1-4% for gpt-nano's
// micro-batches of 1 to 8 sequences on this project's 2-core guest, 0-1% for larger ones. The
// median whole pass keeps the median's robustness against a pass that a neighbour slowed.
std::vector<double> per_call_seconds_of_passes(const std::vector<std::vector<double>>& seconds_by_call);

// Seconds per call of each distinct call (kernel and shape) of the sequences in `precision`
// ("fp32", "bf16", "fp16"), each timed inside its sequence: `rounds` rounds, in each the median
// of at least three passes after a warm-up pass, within about a third of `seconds_per_call`
// per distinct call; the median round counts. `ranks`: how many processes time the same list
// at once on this node (recorded, see kernel_profile.hpp). `progress(done, total)` after each
// sequence.
std::vector<costmodel::KernelTime> time_kernel_sequences(const std::vector<KernelSequence>& sequences,
                                                         const std::string& precision, int devices, int ranks,
                                                         double seconds_per_call, int rounds,
                                                         const std::function<void(std::size_t, std::size_t)>& progress);

}  // namespace sb::calibrate
