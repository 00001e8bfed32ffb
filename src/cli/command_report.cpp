// SPDX-License-Identifier: Apache-2.0
// `scalebench report RESULTS.h5... -o report.html [--title T] [--static]`: the HTML report of
// result files, made by analysis/report.py (h5py; plotly where installed, else matplotlib) run
// with the arguments as an argv (no shell, so no file name is ever interpreted); it names the
// stragglers by running this executable's `inspect --json`. Leaves out the figures themselves
// (the Python).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "launch/child_process.hpp"
#include "cli/commands.hpp"
#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "core/environment.hpp"
#include "core/install_paths.hpp"
#include "core/output_path.hpp"

namespace sb::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out, title = "scalebench report";
  bool static_figures = false;
};

// $SB_PYTHON, else the Debian interpreter whose h5py and matplotlib scripts/setup.sh installs.
std::string python() {
  const std::optional<std::string> chosen = environment_text("SB_PYTHON");
  if (!chosen) return "/usr/bin/python3";
  std::error_code ec;
  SB_USER_CHECK(chosen->find('/') == std::string::npos || std::filesystem::is_regular_file(*chosen, ec),
                "environment variable SB_PYTHON is '{}', which is not a file; unset it or name a python3 with h5py and "
                "matplotlib", chosen->substr(0, 200));
  return *chosen;
}

}  // namespace

std::function<int()> add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "write one HTML report (figures and a table of every run) of result files");
  cmd->add_option("files", o->files, "result files (HDF5)")->required();
  cmd->add_option("-o,--out", o->out, "the HTML file to write")->required();
  cmd->add_option("--title", o->title, "the report's title");
  cmd->add_flag("--static", o->static_figures,
                "matplotlib images instead of interactive plotly charts (the default where python3-plotly is installed)");
  return [o]() {
    for (const std::string& file : o->files) {
      SB_USER_CHECK(std::filesystem::exists(file), "report: result file '{}' does not exist", file);
      require_regular_file(file, "report: result file");
    }
    std::vector<NamedInput> inputs;
    for (const std::string& file : o->files) inputs.push_back({"result file", file});
    require_not_an_input(o->out, "report: -o", inputs);
    const std::filesystem::path parent = std::filesystem::path(o->out).parent_path();
    SB_USER_CHECK(parent.empty() || std::filesystem::is_directory(parent), "report: the folder of -o '{}' does not exist",
                  o->out);
    std::error_code ec;
    const auto target = std::filesystem::status(o->out, ec);
    SB_USER_CHECK(!std::filesystem::exists(target) || std::filesystem::is_regular_file(target),
                  "report: cannot write -o '{}': it is {}, not a regular file", o->out, file_kind(target));
    // the analysis takes seconds: an output that cannot be created is refused before it runs
    const bool existed = std::filesystem::exists(target);
    std::FILE* probe = std::fopen(o->out.c_str(), "a");
    SB_USER_CHECK(probe != nullptr, "report: cannot write -o '{}': {}", o->out, std::strerror(errno));
    std::fclose(probe);
    if (!existed) std::filesystem::remove(o->out, ec);
    const std::filesystem::path script = resource_dir() / "analysis" / "report.py";
    SB_USER_CHECK(std::filesystem::is_regular_file(script), "report: '{}' is missing", script.string());
    std::vector<std::string> args = {python(), script.string()};
    args.insert(args.end(), o->files.begin(), o->files.end());
    args.insert(args.end(), {"-o", o->out, "--title", o->title});
    std::error_code self_ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", self_ec);
    if (!self_ec) args.insert(args.end(), {"--scalebench", self.string()});  // its inspect names the stragglers
    if (o->static_figures) args.push_back("--static");
    return launch::spawn_and_wait(args, "set SB_PYTHON to a python3 with h5py and matplotlib");
  };
}

}  // namespace sb::cli
