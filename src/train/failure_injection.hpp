// Failures on demand, for the tests of failure handling and checkpoint-on-signal. Leaves out
// handling them (parallel/fault.hpp, train/run_record.hpp).
#pragma once

#include <cstdint>

namespace sb::train {

// SB_INJECT_FAILURE="RANK:STEP:error|kill|usr1|term" makes that rank fail at the start of that
// step (1-based): an exception, SIGKILL of its own process, or the scheduler's SIGUSR1 / SIGTERM
// sent to itself. Nothing when the variable is unset or names another rank or step.
void inject_failure_if_asked(int rank, std::int64_t step);

}  // namespace sb::train
