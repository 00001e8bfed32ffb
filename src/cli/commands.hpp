// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `scalebench` executable, each registered on the CLI11 app and run
// by main(). Leaves out argument parsing details (CLI11) and the work itself (src/train, src/io).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace sb::cli {

// Each returns the function to run when its subcommand was chosen; it returns the exit code.
std::function<int()> add_train_command(CLI::App& app, int& argc, char**& argv);
std::function<int()> add_run_command(CLI::App& app);
std::function<int()> add_inspect_command(CLI::App& app);
std::function<int()> add_calibrate_command(CLI::App& app, int& argc, char**& argv);
std::function<int()> add_predict_command(CLI::App& app);
std::function<int()> add_plan_command(CLI::App& app);
std::function<int()> add_submit_command(CLI::App& app);
std::function<int()> add_status_command(CLI::App& app);
std::function<int()> add_collect_command(CLI::App& app);
std::function<int()> add_report_command(CLI::App& app);
std::function<int()> add_validate_command(CLI::App& app);
std::function<int()> add_compare_command(CLI::App& app);

}  // namespace sb::cli
