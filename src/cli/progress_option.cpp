// SPDX-License-Identifier: Apache-2.0
// SB_PROGRESS carries the choice: the ranks of `run` are other processes.
#include "cli/progress_option.hpp"

#include <cstdlib>

namespace sb::cli {

void add_progress_option(CLI::App* cmd, std::string& mode) {
  cmd->add_option("--progress", mode,
                  "progress line: tty (redrawn in place), plain (one line every log_every steps) or off; default "
                  "tty on the terminal of a single process, plain under mpirun/srun or into a file")
      ->check(CLI::IsMember({"plain", "tty", "off"}));
}

void apply_progress_option(const std::string& mode) {
  if (!mode.empty()) setenv("SB_PROGRESS", mode.c_str(), 1);
}

}  // namespace sb::cli
