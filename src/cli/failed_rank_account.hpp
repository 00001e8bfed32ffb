// SPDX-License-Identifier: Apache-2.0
// The error a result file gets when its run's MPI job ended before the run could record why:
// which rank, on which host, and how, from the launcher's words (launch/launcher_failure.hpp)
// and the run's own record of its ranks' hosts (context rank_nodes, hostnames).
#pragma once

#include <filesystem>
#include <string>

namespace sb::cli {

// "rank 1 on host sb-node-b (the launcher's node 10.0.0.2) ended abnormally (signal 9
// (Killed)) before the run finished (mpirun exit 137)", or without the rank when the launcher
// named none.
std::string failed_rank_account(const std::filesystem::path& result_file, const std::string& run_id,
                                const std::string& launcher_output, int exit_code);

// After a case's job failed (exit_code ≠ 0): a run still "interrupted" becomes "failed" with
// the account; a run its rank 0 already marked failed without naming the rank the launcher
// names (a rank 0 ended by mpirun's SIGTERM says only that) gets the account put before its
// own error. A run that finished "ok" is left alone. Returns whether it wrote.
bool record_failed_rank(const std::filesystem::path& result_file, const std::string& run_id,
                        const std::string& launcher_output, int exit_code);

}  // namespace sb::cli
