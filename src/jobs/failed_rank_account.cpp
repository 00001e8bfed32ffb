// SPDX-License-Identifier: Apache-2.0
// See failed_rank_account.hpp.
#include "jobs/failed_rank_account.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "io/results_file.hpp"
#include "io/results_reader.hpp"
#include "metrics/run_context.hpp"
#include "launch/launcher_failure.hpp"

namespace sb::jobs {

namespace {

// The host the run recorded for `rank`, "" when it recorded none (a file from before
// rank_nodes, or a run that ended before its context was written).
std::string recorded_host(const std::filesystem::path& file, const std::string& run_id, std::int64_t rank) {
  const std::string context = "/runs/" + run_id + "/context";
  try {
    if (!io::has_object(file, context)) return "";
    const io::AttrValue nodes = io::read_attribute(file, context, "rank_nodes");
    const auto* by_rank = std::get_if<std::vector<std::int64_t>>(&nodes);
    if (by_rank == nullptr || rank < 0 || rank >= static_cast<std::int64_t>(by_rank->size())) return "";
    std::vector<std::string> hosts;
    std::stringstream names(io::read_string_attribute(file, context, "hostnames"));
    for (std::string host; std::getline(names, host, ',');) hosts.push_back(host);
    const std::int64_t node = (*by_rank)[static_cast<std::size_t>(rank)];
    return node >= 0 && node < static_cast<std::int64_t>(hosts.size()) ? hosts[static_cast<std::size_t>(node)] : "";
  } catch (const std::exception&) {
    return "";  // the account goes on without the host
  }
}

std::string failed_rank_account(const std::filesystem::path& result_file, const std::string& run_id,
                                const std::optional<launch::LauncherFailure>& failure, const std::string& ending) {
  if (!failure) return "a rank of the case's MPI job ended abnormally " + ending;
  return fmt::format("{} {}", launch::describe(*failure, recorded_host(result_file, run_id, failure->rank)), ending);
}

}  // namespace

bool record_failed_rank(const std::filesystem::path& result_file, const std::string& run_id,
                        const std::string& launcher_output, const std::string& ending, bool only_when_named) {
  const std::string run = "/runs/" + run_id;
  const std::string status = io::read_string_attribute(result_file, run, "status");
  const std::optional<launch::LauncherFailure> failure = launch::launcher_failure(launcher_output);
  if (status == "ok" || (only_when_named && !failure)) return false;
  const std::string recorded = io::read_string_attribute(result_file, run, "error");
  // interrupted with a reason: stopped on purpose at a checkpoint (a requeue resumes it)
  if (status == "interrupted" && !recorded.empty()) return false;
  std::string error = failed_rank_account(result_file, run_id, failure, ending);
  if (status != "interrupted") {
    if (!failure || recorded.find(fmt::format("rank {} on", failure->rank)) != std::string::npos) return false;
    if (!recorded.empty()) error += "; rank 0 recorded: " + recorded;
  }
  io::write_group_attributes(result_file, run,
                             {{"status", std::string("failed")}, {"error", error},
                              {"finished_utc", metrics::utc_now_iso8601()}});
  return true;
}

std::string log_tail(const std::filesystem::path& log, std::size_t bytes) {
  std::ifstream in(log, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";
  const std::streamoff start = size > static_cast<std::streamoff>(bytes) ? size - static_cast<std::streamoff>(bytes) : 0;
  in.seekg(start);
  std::string tail(static_cast<std::size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return tail;
}

}  // namespace sb::jobs
