// SPDX-License-Identifier: Apache-2.0
// Reading mpirun's and srun's reports of a failed rank (see launcher_failure.hpp).
#include "launch/launcher_failure.hpp"

#include <fmt/format.h>

#include <regex>
#include <string>

namespace sb::launch {

namespace {

std::optional<LauncherFailure> first_match(std::string_view output, const std::regex& pattern,
                                           LauncherFailure (*read)(const std::cmatch&)) {
  std::cmatch match;
  if (!std::regex_search(output.data(), output.data() + output.size(), match, pattern)) return std::nullopt;
  return read(match);
}

std::int64_t rank_of(const std::csub_match& digits) {
  const std::string text = digits.str();
  return text.size() > 9 ? -1 : std::stoll(text);  // a rank beyond any world is not one
}

}  // namespace

std::optional<LauncherFailure> launcher_failure(std::string_view output) {
  // Open MPI 4: a rank ended by a signal
  static const std::regex signalled(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)\n]*)\))?)");
  // Open MPI 4: the first rank that exited non-zero ("Process name: [[jobid,1],rank]")
  static const std::regex exited(R"(Process name: \[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(\d+))");
  // Slurm: "srun: error: NODE: task RANK: Killed" / "...: Exited with exit code 2"
  static const std::regex srun(R"(srun: error: (\S+): tasks? (\d+)(?:-\d+)?: ([^\n]+))");
  if (auto f = first_match(output, signalled, [](const std::cmatch& m) {
        const std::string name = m[4].matched ? fmt::format(" ({})", m[4].str()) : "";
        return LauncherFailure{rank_of(m[1]), m[2].str(), fmt::format("signal {}{}", m[3].str(), name)};
      }))
    return f;
  if (auto f = first_match(output, srun, [](const std::cmatch& m) {
        return LauncherFailure{rank_of(m[2]), m[1].str(), m[3].str()};
      }))
    return f;
  return first_match(output, exited, [](const std::cmatch& m) {
    return LauncherFailure{rank_of(m[1]), "", fmt::format("exit code {}", m[2].str())};
  });
}

std::string describe(const LauncherFailure& failure, const std::string& host) {
  std::string where;
  if (!host.empty() && !failure.node.empty() && host != failure.node)
    where = fmt::format(" on host {} (the launcher's node {})", host, failure.node);
  else if (!host.empty() || !failure.node.empty())
    where = fmt::format(" on host {}", host.empty() ? failure.node : host);
  const std::string who = failure.rank >= 0 ? fmt::format("rank {}", failure.rank) : std::string("a rank");
  return fmt::format("{}{} ended abnormally ({})", who, where, failure.how);
}

}  // namespace sb::launch
