// SPDX-License-Identifier: Apache-2.0
// Runs the scalebench executable in a scratch folder and captures exit code and stderr.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu_affinity.hpp"
#include "io/checkpoint_file.hpp"
#include "tests/test_support.hpp"

namespace sb::testing {

// Rank 0's flat parameters as a checkpoint file holds them.
inline std::vector<float> checkpoint_parameters(const std::filesystem::path& checkpoint) {
  const io::Checkpoint c = io::read_checkpoint(checkpoint, [](const io::CheckpointRank& r) { return r.rank == 0; });
  return c.ranks.at(0).parameters;
}

// A file's whole text.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A site profile's text without its top-level `key:` mapping, as a user's profile lacking it
// would read (the lines up to the next top-level key go; comments above it stay).
inline std::string site_profile_without(const std::filesystem::path& profile, const std::string& key) {
  const std::string text = read_text(profile);
  const auto begin = text.find("\n" + key + ":\n");
  if (begin == std::string::npos) throw std::runtime_error(profile.string() + " has no top-level '" + key + ":'");
  auto end = text.find('\n', begin + 1);
  while (end != std::string::npos && end + 1 < text.size() && (text[end + 1] == ' ' || text[end + 1] == '#'))
    end = text.find('\n', end + 1);
  return text.substr(0, begin + 1) + (end == std::string::npos ? "" : text.substr(end + 1));
}

struct CommandResult {
  int exit_code = -1;
  std::string stdout_text, stderr_text;
};

class Scratch {
 public:
  // A folder named after the running test.
  Scratch() : Scratch(current_test_name()) {}
  // A folder named `name`, for what a whole test suite shares (SetUpTestSuite has no test).
  explicit Scratch(const std::string& name) {
    dir_ = std::filesystem::temp_directory_path() / ("sb_cli_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() { std::filesystem::remove_all(dir_); }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  CommandResult run(const std::string& args) const { return run_command(std::string(SB_EXE) + " " + args); }
  // `launcher` (e.g. mpirun -np 2) starting scalebench with `args`.
  CommandResult run_under(const std::string& launcher, const std::string& args) const {
    return run_command(launcher + " " + SB_EXE + " " + args);
  }
  // A whole shell command line (cd, timeout, ...), its output captured like run()'s.
  CommandResult run_command_line(const std::string& command_line) const { return run_command(command_line); }

 private:
  CommandResult run_command(const std::string& command_line) const {
    const auto out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command = command_line + " >" + out.string() + " 2>" + err.string();
    // The test's main thread may be bound to one core (OMP_PROC_BIND under ctest); the command
    // gets every CPU this test started with.
    const StartAffinityScope start_cpus;
    const int status = std::system(command.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.stdout_text = read_text(out);
    r.stderr_text = read_text(err);
    return r;
  }

  static std::string current_test_name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "_" + info->name();
  }
  std::filesystem::path dir_;
};

}  // namespace sb::testing
