// `scalebench`: one executable, subcommands. User mistakes print one sentence and exit 2;
// internal faults exit 3; neither prints an abort trace.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "core/check.hpp"

int main(int argc, char** argv) {
  CLI::App app{"scalebench: measure and predict how neural-network training scales"};
  app.require_subcommand(1);
  // "scalebench 0.1.0 (git v0.1.0-3-g1a2b3c4d5e6f, commit 1a2b3c4d5e6f)": CMake's project
  // VERSION, and git describe and the commit at configure time
  app.set_version_flag("--version", std::string("scalebench ") + SB_VERSION + " (git " + SB_GIT_DESCRIBE +
                                        ", commit " + SB_GIT_SHA + ")");
  const auto train = sb::cli::add_train_command(app, argc, argv);
  const auto run = sb::cli::add_run_command(app);
  const auto inspect = sb::cli::add_inspect_command(app);
  const auto calibrate = sb::cli::add_calibrate_command(app, argc, argv);
  const auto predict = sb::cli::add_predict_command(app);
  const auto plan = sb::cli::add_plan_command(app);
  const auto submit = sb::cli::add_submit_command(app);
  const auto status = sb::cli::add_status_command(app);
  const auto collect = sb::cli::add_collect_command(app);
  const auto report = sb::cli::add_report_command(app);
  const auto validate = sb::cli::add_validate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (app.got_subcommand("train")) return train();
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("inspect")) return inspect();
    if (app.got_subcommand("calibrate")) return calibrate();
    if (app.got_subcommand("predict")) return predict();
    if (app.got_subcommand("plan")) return plan();
    if (app.got_subcommand("submit")) return submit();
    if (app.got_subcommand("status")) return status();
    if (app.got_subcommand("collect")) return collect();
    if (app.got_subcommand("report")) return report();
    if (app.got_subcommand("validate")) return validate();
  } catch (const sb::UserError& e) {
    std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalebench: internal error: %s\n", e.what());
    return 3;
  }
  return 1;
}
