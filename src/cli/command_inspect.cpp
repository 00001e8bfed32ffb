// `scalebench inspect RESULTS.h5 [--json]`: a human summary of a result file, or its
// attributes as one JSON document (io/results_json.hpp has the keys).
#include <cstdio>

#include "cli/commands.hpp"
#include "io/results_json.hpp"
#include "io/results_reader.hpp"

namespace sb::cli {

std::function<int()> add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("inspect", "print a human summary of a result file");
  cmd->add_option("file", *path, "result file (HDF5)")->required();
  cmd->add_flag("--json", *json, "print every run's attributes, context, summary and prediction as JSON");
  return [path, json]() {
    if (*json)
      std::puts(io::results_json(*path).dump(2).c_str());
    else
      std::fputs(io::summarize_results(*path).c_str(), stdout);
    return 0;
  };
}

}  // namespace sb::cli
