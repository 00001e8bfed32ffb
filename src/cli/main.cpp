// SPDX-License-Identifier: Apache-2.0
// `scalebench`: one executable, subcommands. User mistakes print one sentence and exit 2;
// internal faults exit 3; neither prints an abort trace.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.hpp"
#include "cli/environment_check.hpp"
#include "core/check.hpp"
#include "core/install_paths.hpp"
#include "sb_git_revision.hpp"  // SB_GIT_SHA, SB_GIT_DESCRIBE: the commit that built this

namespace {

// --help and --version print and exit 0 (CLI11's own output); every other parse error is a
// usage mistake: one sentence and exit 2 like any user error, not CLI11's codes (105-115).
int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  std::fprintf(stderr, "scalebench: error: %s (see scalebench --help, or scalebench COMMAND --help)\n", e.what());
  return 2;
}

// CLI11 reads an unknown command as a stray argument and says only "A subcommand is required".
void refuse_unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  std::string known;
  for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    if (command->get_name() == argv[1]) return;
    known += (known.empty() ? "" : ", ") + command->get_name();
  }
  throw sb::UserError(fmt::format("unknown command '{}'; the commands are {}", argv[1], known));
}

// The version line, then where this binary reads what it ships with and what a site adds
// (core/install_paths.hpp), so that a centre can see which install answered.
std::string version_text() {
  std::string dirs;
  for (const auto& dir : sb::site_profile_dirs()) dirs += (dirs.empty() ? "" : ", ") + dir.string();
  return fmt::format("scalebench {} (git {}, commit {})\nresources: {} ({})\ndata sets: {}\nsite profiles: {}",
                     SB_VERSION, SB_GIT_DESCRIBE, SB_GIT_SHA, sb::resource_dir().string(), sb::resource_dir_origin(),
                     sb::datasets_dir().string(), dirs);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"scalebench: measure and predict how neural-network training scales"};
  app.require_subcommand(1);
  // "scalebench 0.1.0 (git v0.1.0-3-g1a2b3c4d5e6f, commit 1a2b3c4d5e6f)": CMake's project
  // VERSION, and git describe and the commit at configure time
  app.set_version_flag("--version", version_text());
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
  const auto compare = sb::cli::add_compare_command(app);
  try {
    refuse_unknown_command(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  } catch (const sb::UserError& e) {
    std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    return 2;
  }
  try {
    sb::cli::check_environment();
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
    if (app.got_subcommand("compare")) return compare();
  } catch (const sb::UserError& e) {
    std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalebench: internal error: %s\n", e.what());
    return 3;
  }
  return 1;
}
