// SPDX-License-Identifier: Apache-2.0
// Starting another program (mpirun for `run` and `calibrate`, the Python report for `report`):
// argv words exactly as given, no shell, standard streams inherited, waited for. Leaves out
// capturing all output (jobs/process.hpp does that for the scheduler clients).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sb::launch {

// Runs args[0] (looked up on PATH) and returns its exit status, 128 + N when signal N ended
// it. UserError "cannot start '<program>': <reason>" (then `advice`, when given) when it
// cannot start. stdout_to_stderr: the child's standard output goes to our standard error (so
// that ours carries one document, e.g. `run --json`).
int spawn_and_wait(const std::vector<std::string>& args, const std::string& advice = "",
                   bool stdout_to_stderr = false);

// As spawn_and_wait, with the child's standard error kept as well: it passes through to ours as
// it comes, and its last `keep_bytes` come back with the exit status (what mpirun said about a
// failed rank, launcher_failure.hpp).
struct ChildExit {
  int code = 0;
  std::string stderr_tail;
};
ChildExit spawn_and_wait_keeping_stderr(const std::vector<std::string>& args, const std::string& advice = "",
                                        bool stdout_to_stderr = false, std::size_t keep_bytes = 64 * 1024);

// Several programs started at once (each as spawn_and_wait starts one), all waited for: their
// exit statuses in order.
std::vector<int> spawn_all_and_wait(const std::vector<std::vector<std::string>>& commands,
                                    const std::string& advice = "");

}  // namespace sb::launch
