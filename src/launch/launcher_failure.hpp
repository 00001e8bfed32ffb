// SPDX-License-Identifier: Apache-2.0
// Which rank ended a job abnormally, as its launcher reports it: Open MPI's mpirun ("mpirun
// noticed that process rank 1 with PID 8658 on node n2 exited on signal 9 (Killed).", or the
// first process that "exited with non-zero status") and Slurm's srun ("srun: error: n2: task 1:
// Killed"). A rank killed outright (SIGKILL, the OOM killer, a lost node) cannot write its own
// failure, and a rank on another node that notices the lost peer is ended by the MPI library at
// once, so the launcher's report is the one account of it. Leaves out running the launcher
// (child_process.hpp) and writing the result file (io/results_file.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sb::launch {

struct LauncherFailure {
  std::int64_t rank = -1;  // world rank
  std::string node;        // as the launcher names it ("" when it does not say)
  std::string how;         // "signal 9 (Killed)", "exit code 2", or srun's words ("Killed")
};

// The first failed rank the launcher's output names, if any.
std::optional<LauncherFailure> launcher_failure(std::string_view output);

// "rank 1 on host n2 (the launcher's node 10.0.0.2) ended abnormally (signal 9 (Killed))": `host` is
// the run's own record of that rank's host name ("" when the run recorded none).
std::string describe(const LauncherFailure& failure, const std::string& host);

}  // namespace sb::launch
