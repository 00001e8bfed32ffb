// `scalebench inspect RESULTS.h5`: a human summary of a result file.
#include <cstdio>

#include "cli/commands.hpp"
#include "io/results_reader.hpp"

namespace sb::cli {

std::function<int()> add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("inspect", "print a human summary of a result file");
  cmd->add_option("file", *path, "result file (HDF5)")->required();
  return [path]() {
    std::fputs(io::summarize_results(*path).c_str(), stdout);
    return 0;
  };
}

}  // namespace sb::cli
