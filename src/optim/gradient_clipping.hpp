// SPDX-License-Identifier: Apache-2.0
// What every optimizer does before its update: the global L2 norm of all gradients and
// clipping to a maximum norm (torch.nn.utils.clip_grad_norm_). Leaves out per-tensor clipping
// and how the shards of a sharded (ZeRO) optimizer meet: a SquaredNormReducer does that.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "kernels/kernels.hpp"
#include "optim/parameter_slice.hpp"

namespace sb::optim {

// Total elements of the slices, after checking each has memory; `optimizer` names the caller.
std::int64_t checked_total_numel(const std::vector<ParameterSlice>& slices, std::string_view optimizer);

// Turns this rank's sum of squared gradients into the sum over every rank's shard (an
// all-reduce); empty when the slices hold the whole model.
using SquaredNormReducer = std::function<double(double)>;

// How a step's gradients reach the optimizer under fp16 loss scaling: they carry a factor
// loss_scale, divided out before the update (in the same pass as clipping), and with
// skip_non_finite an overflowed gradient (a non-finite norm) skips the step instead of failing.
struct GradientScaling {
  double loss_scale = 1.0;
  bool skip_non_finite = false;
};

// Returns the norm before clipping (of the unscaled gradients); scales every gradient by max_norm / (norm + 1e-6) when
// that is below 1 (max_norm 0 = off). A non-finite norm is an error naming `step`, unless
// scaling.skip_non_finite: then it is returned and the gradients are left as they are. With a
// reducer the norm is that of the whole model, the slices being this rank's shard; slices
// marked replica are then left out of this rank's sum (another rank holds and counts them).
// Slices of 16-bit gradients (grad_bits) are counted in the norm but never scaled in place: the
// factor every gradient takes (1/loss_scale, times the clipping factor) goes to
// *widening_coefficient, for the optimizer to apply as it widens them (required with them).
double clip_gradients_by_global_norm(const std::vector<ParameterSlice>& slices, double max_norm,
                                     const kernels::KernelTable& kernels, std::string_view optimizer,
                                     std::int64_t step, const SquaredNormReducer& reduce = {},
                                     const GradientScaling& scaling = {}, double* widening_coefficient = nullptr);

// An optimizer step's start: clips as above for step `step` + 1 and, when the norm is finite,
// counts the step (++step); a non-finite norm under loss scaling leaves both for a skipped step.
double clip_and_count_step(const std::vector<ParameterSlice>& slices, double max_norm,
                           const kernels::KernelTable& kernels, std::string_view optimizer, std::int64_t& step,
                           const SquaredNormReducer& reduce, const GradientScaling& scaling,
                           double* widening_coefficient = nullptr);

}  // namespace sb::optim
