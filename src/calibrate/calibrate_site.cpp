// SPDX-License-Identifier: Apache-2.0
// The fit: kernel times as measured (the table), the link's α (one-way time of the fastest small
// ping-pong message), β (the median bandwidth of the messages of 1 MiB and up) and γ (what the
// ring all-reduce of 1 MiB and up takes per byte reduced beyond its moves at α/β),
// and, for predictions that fall back to FLOPs (models whose calls are not written down,
// recomputation), each precision's GEMM efficiency at the largest timed GEMM and the memory
// efficiency of the largest residual add on every core.
#include "calibrate/calibrate_site.hpp"
#include "calibrate/page_refault.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "core/cpu_identity.hpp"
#include "core/statistics.hpp"
#include "costmodel/kernel_profile.hpp"
#include "costmodel/link_fit.hpp"
#include "costmodel/site_profile.hpp"
#include "io/results_reader.hpp"
#include "launch/child_process.hpp"
#include "launch/mpirun_environment.hpp"
#include "metrics/run_context.hpp"

namespace sb::calibrate {

namespace {

using launch::prepare_mpirun_environment;
using launch::spawn_all_and_wait;
using launch::spawn_and_wait;

namespace fs = std::filesystem;
using costmodel::KernelProfile;
using costmodel::KernelTime;

const std::vector<std::string> kPrecisions = {"fp32", "bf16", "fp16"};

// BASE's text without its top-level `calibrated:` section (the lines up to the next top-level
// key) and the "# Fitted by" line an earlier calibrate wrote above it, so the datasheet figures
// and their source comments stay as written and a refit replaces the old fit whole.
std::string without_calibrated_section(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  bool skipping = false;
  while (std::getline(in, line)) {
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '#' && line[0] != '-';
    if (top_level) skipping = line.starts_with("calibrated:");
    if (!skipping && !line.starts_with("# Fitted by `scalebench calibrate")) out += line + "\n";
  }
  while (out.ends_with("\n\n")) out.pop_back();
  return out;
}

// α/β of the ping-pong in `file` (our Communicator's path), its times one way already: the
// sweep divides the round trip by its two transfers (results/README).
costmodel::LinkFit fit_link(const fs::path& file) {
  const std::string table = "/calibration/p2p";
  const std::vector<double> sizes = io::read_column(file, table, "size_bytes");
  const std::vector<double> seconds = io::read_column(file, table, "time_s");
  const std::vector<std::string> paths = io::read_string_column(file, table, "path");
  std::vector<std::pair<double, double>> points;  // bytes, one-way seconds
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (paths[i] == "scalebench") points.push_back({sizes[i], seconds[i]});
  return costmodel::fit_link(std::move(points));
}

// γ of the ring all-reduce in `file` (the data-parallel exchange's own ring, as the trainer runs
// it by default) over 2 ranks, beyond its moves at the link's α/β.
costmodel::ReductionFit fit_reduction(const fs::path& file, const costmodel::LinkFit& link) {
  const std::string table = "/calibration/all_reduce";
  const std::vector<double> sizes = io::read_column(file, table, "size_bytes");
  const std::vector<double> seconds = io::read_column(file, table, "time_s");
  const std::vector<std::string> paths = io::read_string_column(file, table, "path");
  std::vector<std::pair<double, double>> points;  // buffer bytes, seconds
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (paths[i] == "ring") points.push_back({sizes[i], seconds[i]});
  return costmodel::fit_reduction(std::move(points), 2, link);
}

// The largest timed call of a kernel in a precision and devices.
const KernelTime* largest(const KernelProfile& profile, const std::string& kernel, const std::string& precision,
                          int devices) {
  const KernelTime* best = nullptr;
  for (const KernelTime& t : profile.times())
    if (t.kernel == kernel && t.precision == precision && t.devices == devices && t.ranks == 1 &&
        (!best || t.size > best->size))
      best = &t;
  return best;
}

}  // namespace

int calibrate_site(const SiteCalibrationOptions& options) {
  const fs::path base_path = costmodel::site_profile_path(options.base, "--site");
  const costmodel::SiteProfile base = costmodel::load_site_profile(base_path);
  SB_USER_CHECK(base.device_is_cpu_core,
                "--site {}: calibrate fits CPU sites (device_is_cpu_core: true), where the trainer runs; a GPU "
                "site keeps its datasheet figures until the trainer trains on GPUs", base_path.string());
  const fs::path out(options.out);
  SB_USER_CHECK(out.parent_path().empty() || fs::is_directory(out.parent_path()),
                "the folder of --out '{}' does not exist", options.out);
  std::vector<int> threads = options.threads;
  if (threads.empty()) threads = {1, base.devices_per_node};
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  for (int t : threads)
    SB_USER_CHECK(t >= 1 && t <= base.devices_per_node, "--threads {}: a rank of site '{}' has 1 to {} cores", t,
                  base.name, base.devices_per_node);

  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const fs::path scratch = fs::temp_directory_path() / fmt::format("scalebench-calibrate-{}", getpid());
  fs::create_directories(scratch);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{scratch};

  // ---- kernels: one process per thread count, placed as a one-rank run places its threads;
  // then, where a node holds several ranks of t threads, that many processes at once, placed
  // as a multi-rank run places them, each kernel's time the slowest rank's (ranks that exchange
  // gradients or activations every step wait for the slowest: a core that runs slower, a sibling
  // hyperthread or the host's interrupts, sets the step, and a mean would hide it). Each process
  // times one round and the configurations take turns, `rounds` times over: the machine's speed
  // wanders over minutes (a neighbour, the host's clock), and a slow spell then lands on one
  // round of every configuration, which the median over the rounds leaves out, instead of on
  // every round of one of them (more rounds outvote longer spells) ----
  const int rounds_total = options.rounds;
  SB_USER_CHECK(rounds_total >= 1, "calibrate: --rounds must be at least 1, got {}", rounds_total);
  const auto command = [&](const fs::path& csv, int t, int ranks) {
    std::vector<std::string> args = {self, "calibrate", "--kernel-times", csv.string(), "--threads",
                                     std::to_string(t), "--ranks-on-node", std::to_string(ranks),
                                     "--seconds-per-call", fmt::format("{}", options.seconds_per_call), "--rounds", "1"};
    if (options.max_batch > 0) args.insert(args.end(), {"--max-batch", std::to_string(options.max_batch)});
    for (const std::string& p : options.precisions) args.insert(args.end(), {"--precision", p});
    return args;
  };
  std::vector<std::pair<int, int>> configurations;  // threads, ranks at once
  for (int t : threads) {
    configurations.push_back({t, 1});
    if (base.devices_per_node / t > 1) configurations.push_back({t, base.devices_per_node / t});
  }
  // rounds[c][k]: configuration c's table from round k, the slowest of its ranks per kernel
  std::vector<std::vector<std::vector<KernelTime>>> rounds(configurations.size());
  for (int round = 0; round < rounds_total; ++round)
    for (std::size_t c = 0; c < configurations.size(); ++c) {
      const auto [t, ranks] = configurations[c];
      std::printf("calibrate: round %d of %d, %d thread(s), %d rank(s) at once\n", round + 1, rounds_total, t, ranks);
      std::fflush(stdout);
      prepare_mpirun_environment(ranks);
      std::vector<std::vector<std::string>> commands;
      std::vector<fs::path> tables;
      for (int r = 0; r < ranks; ++r) {
        tables.push_back(scratch / fmt::format("kernels-{}x{}-{}-round{}.csv", t, ranks, r, round));
        commands.push_back(command(tables.back(), t, ranks));
      }
      const std::vector<int> codes = spawn_all_and_wait(commands);
      for (int code : codes)
        SB_USER_CHECK(code == 0, "calibrate: timing the kernels on {} thread(s), {} rank(s) at once, failed (exit {})",
                      t, ranks, code);
      std::vector<KernelProfile> parts;
      for (const fs::path& table : tables) parts.push_back(KernelProfile::load(table));
      std::vector<KernelTime> slowest = parts[0].times();
      for (std::size_t i = 0; i < slowest.size(); ++i)
        for (std::size_t r = 1; r < parts.size(); ++r)
          slowest[i].seconds = std::max(slowest[i].seconds, parts[r].times()[i].seconds);
      rounds[c].push_back(std::move(slowest));
    }
  KernelProfile profile;
  for (const std::vector<std::vector<KernelTime>>& tables : rounds)
    for (std::size_t i = 0; i < tables[0].size(); ++i) {
      std::vector<double> seconds;
      for (const std::vector<KernelTime>& table : tables) seconds.push_back(table[i].seconds);
      KernelTime time = tables[0][i];
      time.seconds = median(std::move(seconds));
      profile.add(std::move(time));
    }

  // ---- the link between two ranks of a node -------------------------------------------------
  std::optional<costmodel::LinkFit> link;
  std::optional<costmodel::ReductionFit> reduction;
  if (base.devices_per_node >= 2) {
    prepare_mpirun_environment(2);
    const fs::path h5 = scratch / "links.h5";
    const int code = spawn_and_wait({SB_MPIEXEC, "-np", "2", self, "calibrate", "--out", h5.string(), "--collective",
                                     "p2p", "--collective", "all_reduce", "--max-bytes", "16MiB"},
                                    "calibrate measures the link with mpirun (Open MPI)");
    SB_USER_CHECK(code == 0, "calibrate: the ping-pong and all-reduce under mpirun failed (exit {})", code);
    link = fit_link(h5);
    reduction = fit_reduction(h5, *link);
  }

  // ---- efficiencies for the FLOPs fallback ---------------------------------------------------
  const int all = threads.back();
  std::vector<std::pair<std::string, std::string>> gemm;  // precision, "efficiency  # from"
  for (const std::string& precision : options.precisions.empty() ? kPrecisions : options.precisions) {
    const KernelTime* t = largest(profile, "matmul_forward", precision, all);
    if (!t) continue;
    const double efficiency = std::min(1.0, t->size / t->seconds / (base.peak(precision) * all));
    gemm.push_back({precision, fmt::format("{:.4f}   # matmul_forward {} on {} cores: {:.3g} GFLOP/s", efficiency,
                                           fmt::join(t->shape, "x"), all, t->size / t->seconds / 1e9)});
  }
  std::string memory;
  if (const KernelTime* t = largest(profile, "residual_forward", "fp32", all)) {
    const double bandwidth = 3.0 * 4.0 * t->size / t->seconds;
    memory = fmt::format("{:.4f}   # residual_forward of {} floats on {} cores: {:.3g} GB/s",
                         std::min(1.0, bandwidth / (base.memory_bandwidth * all)), t->size, all, bandwidth / 1e9);
  }

  const PageRefault refault = measure_page_refault();

  // ---- write SITE.kernels.csv and SITE.yaml ---------------------------------------------------
  const fs::path table = fs::path(out).replace_extension(".kernels.csv");
  profile.save(table);
  std::string yaml = without_calibrated_section(read_bounded_file(base_path, "site profile", kMaxYamlBytes));
  const std::string fitted_at = metrics::utc_now_iso8601();
  yaml += fmt::format(
      "# Fitted by `scalebench calibrate --site {} --out {}` on {} ({} kernel times on {} thread count(s)).\n"
      "calibrated:\n"
      "  date: \"{}\"\n"
      "  command: \"scalebench calibrate --site {} --out {}\"\n"
      "  cpu: \"{}\"   # /proc/cpuinfo: the CPU whose kernel times these are\n"
      "  # seconds per call of the trainer's kernels, per precision, threads (a rank's cores) and\n"
      "  # ranks timed at once on the node\n"
      "  kernel_times: {}\n",
      options.base, options.out, fitted_at, profile.times().size(), threads.size(), fitted_at, options.base,
      options.out, cpu_identity(), table.filename().string());
  if (!gemm.empty()) {
    yaml += "  # for predictions from FLOPs (calls not written down, recomputation)\n  gemm_efficiency:\n";
    for (const auto& [precision, line] : gemm) yaml += fmt::format("    {}: {}\n", precision, line);
  }
  if (!memory.empty()) yaml += fmt::format("  memory_efficiency: {}\n", memory);
  yaml += fmt::format("  # ZeRO-2 and 3 give each reduced gradient page back and fault it in again\n"
                      "  page_refault_s: {:.4g}   # madvise(MADV_DONTNEED), one read and one write, per 4096 bytes ({}-byte "
                      "pages): median of {} rounds over {} pages\n",
                      refault.seconds_per_page * 4096.0 / static_cast<double>(refault.page_bytes), refault.page_bytes,
                      refault.rounds, refault.pages);
  if (link)
    yaml += fmt::format(
        "  links:\n    intra_node:   # ping-pong between two ranks: {}\n      alpha: {:.4g}\n      beta: {:.4g}\n"
        "      gamma: {:.4g}   # seconds per byte reduced: {}\n",
        link->from, link->alpha, link->beta, reduction->gamma, reduction->from);
  const fs::path partial = fs::path(out).concat(".partial");
  {
    std::ofstream o(partial);
    o << yaml;
    SB_USER_CHECK(o.good(), "cannot write '{}'", partial.string());
  }
  costmodel::load_site_profile(partial);  // what we wrote loads, or nothing replaces the old file
  fs::rename(partial, out);
  std::printf("calibrate: wrote %s and %s (%zu kernel times)\n", out.c_str(), table.c_str(), profile.times().size());
  return 0;
}

}  // namespace sb::calibrate
