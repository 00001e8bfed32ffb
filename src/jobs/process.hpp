// SPDX-License-Identifier: Apache-2.0
// Running a scheduler's client (sbatch, squeue, qsub, bsub, flux) without a shell: argv
// words exactly as given, standard output and error captured, optionally a file on standard
// input. Leaves out timeouts (the clients answer or fail on their own).
#pragma once

#include <string>
#include <vector>

namespace sb::jobs {

struct ProcessResult {
  int exit_code = 0;  // 127: could not start (the command is not installed); 128+N: signal N
  std::string out, err;
};

// argv[0] is looked up on PATH. `stdin_file` empty: standard input is /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_file = "");

}  // namespace sb::jobs
