// SPDX-License-Identifier: Apache-2.0
// A log of the kernel calls a model makes, written by StorageKernels as the calls happen: each
// call's kernel, shape arguments and work (kernels.hpp's estimates beside the declarations),
// grouped into the pipeline units the model announces. The cost model times a recording,
// calibrate times the calls while they run, and tests compare recordings. Leaves out the
// 16-bit conversions at a model's edges (StorageKernels::widen/narrow around a tp all-reduce,
// the rounding of images and master weights): they are counted with the collective and the
// optimizer step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sb::kernels {

struct KernelCall {
  // the kernels.hpp name ("matmul_forward"), "conv2d_backward_weight" (conv2d_backward without
  // an input gradient), or "fill" (a memset of a view)
  std::string kernel;
  std::vector<std::int64_t> shape;  // its shape arguments in signature order (fill: bytes)
  // What the call's time grows with, for interpolating between calibrated calls of one kernel:
  // its FLOPs for a GEMM, convolution or attention, the elements it touches otherwise.
  double size = 0;
  double flops = 0;  // as kernels.hpp's work estimate
  double bytes = 0;  // read and written, in the caller's storage
  // spelled out: nvcc compiles this header as C++17
  bool operator==(const KernelCall& o) const {
    return kernel == o.kernel && shape == o.shape && size == o.size && flops == o.flops && bytes == o.bytes;
  }
};

// The calls of one unit ("embedding", "block", "head", "stem", ...) in the order made.
struct RecordedUnit {
  std::string unit;
  std::vector<KernelCall> calls;
};

class KernelRecorder {
 public:
  enum class Mode {
    record_only,     // the kernels do not run: a model built with this recorder allocates nothing
    record_and_run,  // every call runs as without a recorder
  };
  explicit KernelRecorder(Mode mode = Mode::record_and_run) : mode_(mode) {}

  bool runs_kernels() const { return mode_ == Mode::record_and_run; }
  // The calls from here on belong to `unit` (until the next begin_unit).
  void begin_unit(std::string unit) { units_.push_back({std::move(unit), {}}); }
  void record(KernelCall call);
  // Times every call that runs: `before` the kernel starts, `after` it returns, with the call.
  // Calibrate fences the device in them.
  void set_call_hooks(std::function<void()> before, std::function<void(const KernelCall&)> after) {
    before_ = std::move(before), after_ = std::move(after);
  }
  void call_started() const {
    if (before_) before_();
  }
  void call_finished() const {
    if (after_ && !units_.empty() && !units_.back().calls.empty()) after_(units_.back().calls.back());
  }

  const std::vector<RecordedUnit>& units() const { return units_; }
  // Every call in order, whatever its unit.
  std::vector<KernelCall> calls() const;
  void clear() { units_.clear(); }

 private:
  Mode mode_;
  std::vector<RecordedUnit> units_;
  std::function<void()> before_;
  std::function<void(const KernelCall&)> after_;
};

inline void KernelRecorder::record(KernelCall call) {
  if (units_.empty()) begin_unit("");
  units_.back().calls.push_back(std::move(call));
}

inline std::vector<KernelCall> KernelRecorder::calls() const {
  std::vector<KernelCall> all;
  for (const RecordedUnit& u : units_) all.insert(all.end(), u.calls.begin(), u.calls.end());
  return all;
}

}  // namespace sb::kernels
