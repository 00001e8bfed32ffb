// Timing the trainer's kernels for `calibrate`: the calls one micro-batch of each reference
// model makes (costmodel/kernel_calls.hpp) at a range of micro-batches and tp sizes, the
// optimizer's per-parameter calls at a range of sizes, through the cpu back-end's
// StorageKernels<S> in each precision and the optim classes, in this process's threads.
// Leaves out starting one process per thread count (command_calibrate.cpp) and the CUDA
// back-end (the trainer does not train on GPUs yet).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "costmodel/kernel_calls.hpp"
#include "costmodel/kernel_profile.hpp"

namespace sb::cli {

// One stretch of the trainer's calls (a micro-batch of one model, tp and size; an optimizer step;
// fills), timed in its order (see kernel_benchmark.cpp).
struct KernelSequence {
  std::vector<costmodel::KernelCall> calls;
};

// What to time for one precision (element bytes 4 or 2): one micro-batch (every unit's forward,
// then every backward in reverse) of gpt-nano and gpt-tiny at micro-batches 1..32 and tp 1, 2,
// 4, and of resnet-mini at 4..128 images; the optimizer's calls at 1e4..1e7 parameters; fills
// of 1 KiB..64 MiB. max_batch > 0 leaves out GPT micro-batches and ResNet image counts above it
// (ResNet keeps its smallest, 4).
std::vector<KernelSequence> sequences_to_calibrate(int element_bytes, std::int64_t max_batch = 0);

// Seconds per call of each distinct call (kernel and shape) of the sequences in `precision`
// ("fp32", "bf16", "fp16"), each timed inside its sequence: `rounds` rounds, in each the median
// of at least three passes after a warm-up pass, within about a third of `seconds_per_call` per
// call; the median round counts. `ranks`: how many processes time the same list at once on this
// node (recorded, see kernel_profile.hpp). `progress(done, total)` after each sequence.
std::vector<costmodel::KernelTime> time_kernel_sequences(const std::vector<KernelSequence>& sequences,
                                                         const std::string& precision, int devices, int ranks,
                                                         double seconds_per_call, int rounds,
                                                         const std::function<void(std::size_t, std::size_t)>& progress);

}  // namespace sb::cli
