// SPDX-License-Identifier: Apache-2.0
// `--progress plain|tty|off` of train and run: how rank 0 shows its progress line. Leaves out
// the line itself (train/progress.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace sb::cli {

// Registers --progress on `cmd`, storing the choice in `mode` ("" when not given).
void add_progress_option(CLI::App* cmd, std::string& mode);

// Hands the choice to the trainer, and to the ranks `run` starts, through SB_PROGRESS (what
// mpirun passes on); a mode given on the command line wins over one in the environment.
void apply_progress_option(const std::string& mode);

}  // namespace sb::cli
