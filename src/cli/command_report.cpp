// `scalebench report RESULTS.h5... -o report.html [--title T]`: the HTML report of result files,
// made by analysis/report.py (h5py, matplotlib) run with the arguments as an argv (no shell, so
// no file name is ever interpreted). Leaves out the figures themselves (the Python).
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "cli/commands.hpp"
#include "core/check.hpp"

extern char** environ;

namespace sb::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out, title = "scalebench report";
};

// $SB_PYTHON, else the Debian interpreter whose h5py and matplotlib scripts/setup.sh installs.
std::string python() {
  const char* chosen = std::getenv("SB_PYTHON");
  return chosen && *chosen ? chosen : "/usr/bin/python3";
}

}  // namespace

std::function<int()> add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "write one HTML report (figures and a table of every run) of result files");
  cmd->add_option("files", o->files, "result files (HDF5)")->required();
  cmd->add_option("-o,--out", o->out, "the HTML file to write")->required();
  cmd->add_option("--title", o->title, "the report's title");
  return [o]() {
    for (const std::string& file : o->files)
      SB_USER_CHECK(std::filesystem::is_regular_file(file), "report: result file '{}' does not exist", file);
    const std::filesystem::path parent = std::filesystem::path(o->out).parent_path();
    SB_USER_CHECK(parent.empty() || std::filesystem::is_directory(parent), "report: the folder of -o '{}' does not exist",
                  o->out);
    const std::filesystem::path script = std::filesystem::path(SB_SOURCE_DIR) / "analysis" / "report.py";
    SB_USER_CHECK(std::filesystem::is_regular_file(script), "report: '{}' is missing", script.string());
    std::vector<std::string> args = {python(), script.string()};
    args.insert(args.end(), o->files.begin(), o->files.end());
    args.insert(args.end(), {"-o", o->out, "--title", o->title});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t child = 0;
    const int spawned = posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ);
    SB_USER_CHECK(spawned == 0, "report: cannot start '{}' ({}); set SB_PYTHON to a python3 with h5py and matplotlib",
                  argv[0], std::strerror(spawned));
    int status = 0;
    while (waitpid(child, &status, 0) < 0) SB_CHECK(errno == EINTR, "report: waitpid: {}", std::strerror(errno));
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 1;
  };
}

}  // namespace sb::cli
