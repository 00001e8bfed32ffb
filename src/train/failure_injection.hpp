// SPDX-License-Identifier: Apache-2.0
// Failures on demand, for the tests of failure handling and checkpoint-on-signal. Leaves out
// handling them (parallel/fault.hpp, train/run_record.hpp).
#pragma once

#include <cstdint>

namespace sb::train {

// SB_INJECT_FAILURE="RANK:STEP:error|kill|usr1|term" makes that rank fail at the start of that
// step (1-based): an exception, SIGKILL of its own process, or the scheduler's SIGUSR1 / SIGTERM
// sent to itself. Nothing when the variable is unset or names another rank or step.
// Mode slowP (slow30 by default "slow") makes nothing fail: it is read by slowdown_to_inject.
void inject_failure_if_asked(int rank, std::int64_t step);

// A straggler on demand: with SB_INJECT_FAILURE="RANK:STEP:slow" (or slowP, P percent; 30 by
// default), the fraction (0.3) by which that rank's compute is slowed from that step (1-based)
// on (the trainer adds that share of the step's own CPU work, at the end of its backward where it
// exchanges gradients: slowed_gradient_sync.hpp; as a slower device would); 0 for every
// other rank and step, or when unset.
double slowdown_to_inject(int rank, std::int64_t step);

// SB_INJECT_OVERFLOW=STEP[:RANK] (STEP 1-based) makes that step's gradients overflow on world
// rank RANK, or on every rank without it: the test of loss scaling's skipped step. 0 when unset
// or when this rank is not the one named.
std::int64_t overflow_step_to_inject(int world_rank);

// UserError, naming the variable, when SB_INJECT_FAILURE or SB_INJECT_OVERFLOW is set to
// something it does not take: read before a command writes anything.
void check_injection_environment();

}  // namespace sb::train
