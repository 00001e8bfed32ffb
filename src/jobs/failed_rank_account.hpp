// SPDX-License-Identifier: Apache-2.0
// The error a result file gets when its run's job ended before the run could record why: which
// rank, on which host, and how, from the launcher's words (launch/launcher_failure.hpp: mpirun's
// output under `run`, srun's lines in a Slurm job's log under `collect`) and the run's own record
// of its ranks' hosts (context rank_nodes, hostnames).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace sb::jobs {

// After a case's job failed, the account "rank 1 on host sb-node-b (the launcher's node
// 10.0.0.2) ended abnormally (signal 9 (Killed)) <ending>" ("a rank of the case's MPI job ended
// abnormally <ending>" when the launcher named none) goes into the result file: a run still
// "interrupted" with no reason (killed before it could give one; one stopped at a checkpoint
// says so and is left for its requeue) becomes "failed" with it; a run its rank 0 already marked
// failed without naming the rank the launcher names (a rank 0 ended by mpirun's SIGTERM says only
// that) gets it put before its own error. A run that finished "ok" is left alone; so is every
// run when `only_when_named` and the launcher named no rank (a job still running leaves its run
// "interrupted" too). Returns whether it wrote.
bool record_failed_rank(const std::filesystem::path& result_file, const std::string& run_id,
                        const std::string& launcher_output, const std::string& ending, bool only_when_named);

// The last `bytes` of a job's log (all of a shorter one); "" when it cannot be read.
std::string log_tail(const std::filesystem::path& log, std::size_t bytes = 64 * 1024);

}  // namespace sb::jobs
