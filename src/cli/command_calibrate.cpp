// SPDX-License-Identifier: Apache-2.0
// `scalebench calibrate --out F.h5 [--min-bytes B] [--max-bytes B]`: the collectives
// microbenchmark, run under mpirun: its options, its table on stdout and the /calibration
// tables rank 0 writes. With --out SITE.yaml it fits a site profile instead, and with
// --kernel-times it is that fit's child. Leaves out the engines: the sweeps and the fit
// (src/calibrate/), the kernels' timing (calibrate/kernel_times.hpp).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/calibrate_site.hpp"
#include "calibrate/collective_sweep.hpp"
#include "calibrate/gemm_sweep.hpp"
#include "calibrate/kernel_times.hpp"
#include "cli/commands.hpp"
#include "cli/mpi_session.hpp"
#include "core/check.hpp"
#include "io/calibration_table.hpp"
#include "io/gemm_table.hpp"
#include "measure/row_printer.hpp"
#include "metrics/run_context.hpp"
#include "parallel/communicator.hpp"
#include "parallel/fault.hpp"
#include "parallel/mpi_check.hpp"
#include "runtime/parallel_runtime.hpp"

namespace sb::cli {

namespace {

struct CalibrateOptions {
  std::string out;
  calibrate::SiteCalibrationOptions site;
  std::string kernel_times;  // the child's mode: time the kernels into this CSV
  int ranks_on_node = 1;     // the child's mode: how many children time at once
  calibrate::CollectiveSweepOptions sweep;
  bool gemm = false;                      // --gemm: also /calibration/gemm, the trainer's GEMM per
                                          // precision on every rank at once (gemm_sweep.hpp)
  std::vector<std::int64_t> gemm_sizes = {256, 512, 1024};
  int gemm_threads = 1;                   // of each rank, for the GEMM sweep
};

std::string format_bytes(std::int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

// The sweep's table on stdout, a row per size: the raw MPI path, ours, and the ring's where
// there is one, each against the raw path's bus bandwidth.
measure::RowPrinter sweep_printer() {
  return measure::RowPrinter(stdout, {{"collective", 15, 0, true}, {"size", 10}, {"ranks", 6}, {"iters", 6},
                                      {"time_us", 12, 2}, {"mpi_busbw", 12}, {"ours_busbw", 12}, {"ratio", 7, 3},
                                      {"ring_busbw", 12}, {"ratio", 7, 3}});
}

std::vector<io::RecordCell> sweep_cells(const std::string& name, std::int64_t bytes,
                                        const std::vector<io::CalibrationRow>& rows) {
  const io::CalibrationRow& raw_row = rows[0];
  const io::CalibrationRow& ours = rows[1];
  const auto ratio = [&](const io::CalibrationRow& row) {
    return raw_row.busbw_gbps > 0 ? row.busbw_gbps / raw_row.busbw_gbps : 0.0;
  };
  std::vector<io::RecordCell> cells = {name,         format_bytes(bytes), ours.ranks,      ours.iterations,
                                       ours.time_s * 1e6, raw_row.busbw_gbps, ours.busbw_gbps, ratio(ours)};
  if (rows.size() > 2) cells.insert(cells.end(), {rows[2].busbw_gbps, ratio(rows[2])});
  return cells;
}

void print_gemm_rows(const std::vector<io::GemmRow>& rows) {
  const measure::RowPrinter printer(stdout, {{"gemm", 10, 0, true}, {"m", 6}, {"n", 6}, {"k", 6}, {"ranks", 6},
                                             {"threads", 8}, {"time_us", 12, 1}, {"tflops", 10}});
  printer.header();
  for (const io::GemmRow& row : rows)
    printer.row({row.precision, row.m, row.n, row.k, row.ranks, row.threads, row.time_s * 1e6, row.tflops});
}

void run_sweep(const CalibrateOptions& options) {
  auto world = parallel::make_mpi_world_communicator();
  parallel::install_termination_handler();
  const bool writer = world->rank() == 0;
  MPI_Comm raw = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &raw));
  const std::filesystem::path out(options.out);
  if (writer) {
    io::Attributes context = metrics::collect_run_context(1, raw);
    context.emplace_back("ranks", std::int64_t{world->size()});
    context.emplace_back("min_bytes", options.sweep.min_bytes);
    context.emplace_back("max_bytes", options.sweep.max_bytes);
    context.emplace_back("created_utc", metrics::utc_now_iso8601());
    io::write_calibration_context(out, context);
  } else {
    metrics::collect_run_context(1, raw);  // collective: every rank names its host
  }
  if (options.gemm) {
    const ParallelRuntime runtime(options.gemm_threads);
    const auto rows = calibrate::run_gemm_sweep(raw, options.gemm_threads, options.gemm_sizes);
    if (writer) {
      print_gemm_rows(rows);
      io::write_gemm_table(out, rows);
    }
  }
  const measure::RowPrinter printer = sweep_printer();
  if (writer) printer.header();
  calibrate::run_collective_sweep(
      *world, raw, options.sweep,
      [&](const std::string& name, std::int64_t bytes, const std::vector<io::CalibrationRow>& rows) {
        if (writer) printer.row(sweep_cells(name, bytes, rows));
      },
      [&](const std::string& name, const std::vector<io::CalibrationRow>& table) {
        if (writer) io::write_calibration_table(out, name, table);
      });
  MPI_Comm_free(&raw);
  if (writer) std::printf("busbw in GB/s (nccl-tests definition); tables in %s:/calibration\n", options.out.c_str());
}

int run_calibration(const CalibrateOptions& options, int& argc, char**& argv) {
  MpiSession mpi(argc, argv);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  SB_USER_CHECK(ranks >= 2,
                "calibrate measures communication between ranks; launch it with mpirun -np 2 (or more)");
  // From here a failure may strike one rank only (rank 0 writes the file): it must take the
  // job down rather than leave the others waiting in the next collective.
  try {
    run_sweep(options);
  } catch (const UserError& e) {
    parallel::report_failure_and_abort(fmt::format("error: {}", e.what()), 2);
  } catch (const std::exception& e) {
    parallel::report_failure_and_abort(e.what(), 3);
  }
  return 0;
}

}  // namespace

std::function<int()> add_calibrate_command(CLI::App& app, int& argc, char**& argv) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "fit a site profile on this machine (--out SITE.yaml: kernel times, link α/β), or time collectives and "
      "point-to-point over message sizes (--out F.h5, under mpirun)");
  cmd->add_option("--out", options->out,
                  "SITE.yaml: a site profile fitted here, from --site, beside SITE.kernels.csv; F.h5: a result file "
                  "that receives /calibration/<collective> tables (created if missing, other content kept)");
  cmd->add_option("--site", options->site.base,
                  "with --out SITE.yaml: the profile to start from (a name in jobs/sites or a path; default "
                  "this-machine); its datasheet figures and comments are kept")
      ->default_val("this-machine");
  cmd->add_option("--threads", options->site.threads,
                  "with --out SITE.yaml: thread counts to time the kernels on (repeatable; default 1 and every core of "
                  "a node)");
  cmd->add_option("--precision", options->site.precisions, "with --out SITE.yaml: precisions to time (repeatable; "
                  "default fp32, bf16, fp16)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--seconds-per-call", options->site.seconds_per_call,
                  "timing budget per kernel call and three rounds (default 0.02; the median round counts)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-batch", options->site.max_batch,
                  "largest micro-batch timed: GPT sequences (of 1 to 32) and ResNet images (of 4 to 128; the smallest "
                  "always); larger ones are scaled from the largest timed (default: every size)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kernel-times", options->kernel_times,
                  "time the trainer's kernels in this process (--threads N, one value) into this CSV file; what "
                  "--out SITE.yaml runs once per thread count");
  cmd->add_option("--rounds", options->site.rounds,
                  "rounds over the kernel list, each kernel's median round counts (default 3): with --out SITE.yaml "
                  "one process of one round per configuration, the configurations taking turns; with "
                  "--kernel-times all rounds in this process")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ranks-on-node", options->ranks_on_node,
                  "with --kernel-times: how many such processes time at once on this node (recorded in the table)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--min-bytes", options->sweep.min_bytes, "smallest message size (default 4; accepts 4KiB, 1MiB)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-bytes", options->sweep.max_bytes, "largest message size (default 256MiB)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--collective", options->sweep.collectives,
                  "measure only this one (repeatable; default: all)")
      ->check(CLI::IsMember({"all_reduce", "reduce_scatter", "all_gather", "p2p"}));
  cmd->add_flag("--gemm", options->gemm,
                "also time the trainer's GEMM (fp32, bf16, fp16 storage) on every rank at once into /calibration/gemm");
  cmd->add_option("--gemm-size", options->gemm_sizes, "square GEMM size m = n = k (repeatable; default 256 512 1024)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{16384}));
  cmd->add_option("--gemm-threads", options->gemm_threads, "threads of each rank for the GEMM sweep (default 1)")
      ->check(CLI::Range(1, 1024));
  return [options, &argc, &argv]() {
    if (!options->kernel_times.empty()) {
      SB_USER_CHECK(options->site.threads.size() <= 1, "--kernel-times times one thread count; got {} --threads",
                    options->site.threads.size());
      const int threads = options->site.threads.empty() ? 1 : options->site.threads[0];
      SB_USER_CHECK(threads >= 1, "--threads must be at least 1, got {}", threads);
      return calibrate::time_kernels_to_file(options->kernel_times, threads, options->ranks_on_node, options->site.precisions,
                                  options->site.seconds_per_call, options->site.max_batch, options->site.rounds);
    }
    SB_USER_CHECK(!options->out.empty(), "calibrate needs --out SITE.yaml (fit a site profile) or --out F.h5 "
                  "(the collective sweep, under mpirun)");
    const std::filesystem::path out(options->out);
    const auto parent = out.parent_path();
    SB_USER_CHECK(parent.empty() || std::filesystem::is_directory(parent),
                  "the folder of --out '{}' does not exist", options->out);
    if (out.extension() == ".yaml" || out.extension() == ".yml") {
      options->site.out = options->out;
      return calibrate::calibrate_site(options->site);
    }
    SB_USER_CHECK(options->sweep.min_bytes >= 1 && options->sweep.min_bytes <= options->sweep.max_bytes,
                  "--min-bytes {} and --max-bytes {} must satisfy 1 <= min <= max", options->sweep.min_bytes,
                  options->sweep.max_bytes);
    SB_USER_CHECK(options->sweep.max_bytes <= (std::int64_t{1} << 33),
                  "--max-bytes {} is above 8 GiB, the most one MPI call of floats can carry",
                  options->sweep.max_bytes);
    return run_calibration(*options, argc, argv);
  };
}

}  // namespace sb::cli
