// SPDX-License-Identifier: Apache-2.0
// `scalebench run [SUITE] [--out DIR]`: every case of a suite on this machine, each in its
// own `mpirun -np <world>` (a fresh process: Kokkos and MPI start once per process), gathered
// into DIR/<suite>.h5, then a comparison table (or, with --json, the same as one JSON document).
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "launch/child_process.hpp"
#include "launch/mpirun_environment.hpp"
#include "cli/commands.hpp"
#include "cli/progress_option.hpp"
#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "core/install_paths.hpp"
#include "core/replace_file.hpp"
#include "io/copy_run.hpp"
#include "io/results_file.hpp"
#include "io/results_reader.hpp"
#include "jobs/failed_rank_account.hpp"
#include "measure/repeat_spread.hpp"
#include "runtime/device_runtime.hpp"
#include "train/checkpoint.hpp"
#include "plan/config.hpp"
#include "plan/suite.hpp"

namespace sb::cli {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string suite = (resource_dir() / "suites" / "quickstart.yaml").string();
  std::string out = "results";
  std::vector<std::string> overrides;
  std::string progress;
  bool json = false;
  std::int64_t repeat = 0;  // 0: the suite's own repeats
};

struct RunOverview {
  std::string model, status;
  double final_loss = NAN, final_eval_loss = NAN, final_accuracy = NAN, tokens_per_s = NAN, samples_per_s = NAN;
  double step_time_median_s = NAN, achieved_tflops = NAN, peak_bytes = NAN;
};

RunOverview read_run_overview(const fs::path& file, const std::string& id) {
  const std::string run = "/runs/" + id;
  RunOverview r;
  r.model = io::read_string_attribute(file, run, "model");
  r.status = io::read_string_attribute(file, run, "status");
  const std::string summary = run + "/summary";
  if (!io::has_object(file, summary)) return r;
  for (const auto& [name, value] : io::read_attributes(file, summary)) {
    if (std::holds_alternative<std::string>(value)) continue;
    const double number = std::holds_alternative<double>(value) ? std::get<double>(value)
                                                                 : static_cast<double>(std::get<std::int64_t>(value));
    if (name == "final_loss") r.final_loss = number;
    else if (name == "final_eval_loss") r.final_eval_loss = number;
    else if (name == "final_accuracy") r.final_accuracy = number;
    else if (name == "tokens_per_s") r.tokens_per_s = number > 0 ? number : NAN;  // 0: not sequences
    else if (name == "samples_per_s") r.samples_per_s = number;
    else if (name == "step_time_median_s") r.step_time_median_s = number;
    else if (name == "achieved_tflops") r.achieved_tflops = number;
    else if (name == "peak_bytes") r.peak_bytes = number;
  }
  return r;
}

// Cases on device cuda need a GPU per rank on this machine (NCCL takes one rank per GPU):
// refused before any case runs, so a suite never half-runs for want of GPUs.
void check_gpus_for(const plan::Suite& suite, const std::vector<plan::TrainConfig>& configs) {
  const int gpus = visible_gpu_count();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].device != "cuda") continue;
    const plan::SuiteCase& c = suite.cases[i];
    SB_USER_CHECK(gpus > 0,
                  "{}: case '{}' runs on device cuda, but no CUDA device visible on this machine; run the suite on a "
                  "GPU node", suite.source, c.id);
    SB_USER_CHECK(c.world_size <= gpus,
                  "{}: case '{}' runs {} ranks on device cuda, one GPU each, and this machine shows {} GPU(s); "
                  "lower strategy.dp", suite.source, c.id, c.world_size, gpus);
  }
}

std::string cell(double value, const char* format) {
  return std::isfinite(value) ? fmt::format(fmt::runtime(format), value) : "-";
}

void print_overview_table(const fs::path& suite_file) {
  std::printf("\n%-28s %-11s %-7s %10s %10s %8s %10s %10s %9s %9s %10s\n", "case", "model", "status",
              "train", "held-out", "acc %", "samples/s", "tokens/s", "ms/step", "GFLOP/s", "peak MiB");
  if (fs::exists(suite_file)) {
    for (const auto& id : io::list_runs(suite_file)) {
      const RunOverview r = read_run_overview(suite_file, id);
      std::printf("%-28s %-11s %-7s %10s %10s %8s %10s %10s %9s %9s %10s\n", id.c_str(), r.model.c_str(),
                  r.status.c_str(), cell(r.final_loss, "{:.4f}").c_str(),
                  cell(r.final_eval_loss, "{:.4f}").c_str(), cell(100 * r.final_accuracy, "{:.1f}").c_str(),
                  cell(r.samples_per_s, "{:.1f}").c_str(), cell(r.tokens_per_s, "{:.0f}").c_str(), cell(1e3 * r.step_time_median_s, "{:.1f}").c_str(),
                  cell(1e3 * r.achieved_tflops, "{:.2f}").c_str(),
                  cell(r.peak_bytes / 1048576.0, "{:.1f}").c_str());
    }
  }
  std::printf("\nresults: %s (scalebench inspect %s)\n", suite_file.c_str(), suite_file.c_str());
}

// One case's spread over its repeats, from each finished repeat's median step time, written to
// /repeats/<case> of the suite file; nullopt when no repeat finished.
std::optional<measure::RepeatSpread> record_repeat_spread(const fs::path& suite_file, const plan::SuiteCase& c) {
  std::vector<double> medians;
  for (std::int64_t r = 1; r <= c.repeats; ++r) {
    const std::string id = plan::repeat_run_id(c.id, r, c.repeats);
    if (!fs::exists(suite_file) || !io::has_object(suite_file, "/runs/" + id)) continue;
    const RunOverview o = read_run_overview(suite_file, id);
    if (o.status == "ok" && std::isfinite(o.step_time_median_s)) medians.push_back(o.step_time_median_s);
  }
  if (medians.empty()) return std::nullopt;
  const measure::RepeatSpread s = measure::repeat_spread(medians);
  io::write_group_attributes(suite_file, "/repeats/" + c.id,
                             {{"repeats", c.repeats}, {"finished", s.repeats}, {"step_time_median_s", s.median_s},
                              {"step_time_mean_s", s.mean_s}, {"step_time_ci95_low_s", s.ci95_low_s},
                              {"step_time_ci95_high_s", s.ci95_high_s}, {"step_time_range_pct", s.range_pct},
                              {"noisy", static_cast<std::int64_t>(s.noisy)}, {"noise_bound_pct", s.bound_pct}});
  return s;
}

void print_repeat_spreads(FILE* log, const plan::Suite& suite,
                          const std::vector<std::optional<measure::RepeatSpread>>& spreads) {
  for (std::size_t i = 0; i < suite.cases.size(); ++i) {
    if (suite.cases[i].repeats == 1 || !spreads[i]) continue;
    const measure::RepeatSpread& s = *spreads[i];
    std::fprintf(log, "%-28s %lld of %lld repeats: median %.2f ms, mean 95%% CI [%.2f, %.2f] ms, range %.1f%%%s\n",
                 suite.cases[i].id.c_str(), static_cast<long long>(s.repeats),
                 static_cast<long long>(suite.cases[i].repeats), 1e3 * s.median_s, 1e3 * s.ci95_low_s,
                 1e3 * s.ci95_high_s, s.range_pct,
                 s.noisy ? fmt::format(" NOISY (beyond {:.0f}%)", s.bound_pct).c_str() : "");
  }
}

// `run --json` (NaN is written as null): {"suite", "file", "failures", "runs": [{"id", "model", "status", "final_loss",
// "final_eval_loss", "final_accuracy", "samples_per_s", "tokens_per_s", "step_time_median_s",
// "achieved_tflops", "peak_bytes"}]}, each number null where the run has none.
nlohmann::json overview_json(const plan::Suite& suite, const fs::path& suite_file, int failures) {
  nlohmann::json j{{"suite", suite.name}, {"file", suite_file.string()}, {"failures", failures},
                   {"runs", nlohmann::json::array()}};
  if (!fs::exists(suite_file)) return j;
  for (const auto& id : io::list_runs(suite_file)) {
    const RunOverview r = read_run_overview(suite_file, id);
    j["runs"].push_back({{"id", id}, {"model", r.model}, {"status", r.status}, {"final_loss", r.final_loss},
                         {"final_eval_loss", r.final_eval_loss},
                         {"final_accuracy", r.final_accuracy}, {"samples_per_s", r.samples_per_s},
                         {"tokens_per_s", r.tokens_per_s},
                         {"step_time_median_s", r.step_time_median_s},
                         {"achieved_tflops", r.achieved_tflops}, {"peak_bytes", r.peak_bytes}});
  }
  return j;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "run every case of a suite on this machine and compare them");
  cmd->add_option("suite", options->suite, "suite file (YAML)")->capture_default_str();
  cmd->add_option("--out", options->out, "folder for results")->capture_default_str();
  cmd->add_option("--set", options->overrides, "override a key in every case: key=value (repeatable)");
  add_progress_option(cmd, options->progress);
  cmd->add_flag("--json", options->json, "print the comparison as JSON on stdout (the cases' output goes to stderr)");
  cmd->add_option("--repeat", options->repeat,
                  "run every case N times, the repeats interleaved across cases (default: the suite's repeats)")
      ->check(CLI::Range(1, 100));
  return [options]() {
    apply_progress_option(options->progress);
    const fs::path out_dir(options->out);
    std::error_code ec;
    const fs::file_status out_status = fs::status(out_dir, ec);
    SB_USER_CHECK(!fs::exists(out_status) || fs::is_directory(out_status), "run: --out '{}' is {}, not a folder",
                  options->out, file_kind(out_status));
    const plan::Suite suite = plan::load_suite(options->suite, options->overrides, options->repeat);
    const fs::path cases_dir = out_dir / (suite.name + ".cases");
    const auto file_id_of = [](const std::string& id) {
      std::string file_id;
      for (char ch : id) file_id += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ? ch : '_';
      return file_id;
    };
    // finetune.from and distill.teacher: run:<case> is the checkpoint an earlier case of this
    // suite writes (load_suite checked that it is an earlier case)
    std::vector<YAML::Node> configs;
    std::vector<plan::TrainConfig> parsed;
    std::map<std::string, fs::path> checkpoints;  // case id -> where it writes its checkpoint
    for (const auto& c : suite.cases) {
      YAML::Node config = YAML::Clone(c.config);
      for (const auto& [block, key] : {std::pair{"finetune", "from"}, std::pair{"distill", "teacher"}}) {
        if (!config[block] || !config[block][key]) continue;
        const std::string from = config[block][key].as<std::string>();
        if (from.rfind("run:", 0) != 0) continue;
        const auto earlier = checkpoints.find(from.substr(4));
        SB_CHECK(earlier != checkpoints.end(), "case '{}' names '{}': load_suite let it through", c.id, from);
        config[block][key] = fs::absolute(earlier->second).string();
      }
      parsed.push_back(plan::parse_train_config(config, suite.source));
      const std::string first_run = plan::repeat_run_id(c.id, 1, c.repeats);  // what a later case starts from
      checkpoints[c.id] = train::checkpoint_path_of(parsed.back(), cases_dir / (file_id_of(first_run) + ".h5"), first_run);
      configs.push_back(config);
    }
    check_gpus_for(suite, parsed);

    fs::create_directories(out_dir);
    fs::create_directories(cases_dir);
    const fs::path suite_file = out_dir / (suite.name + ".h5");
    fs::remove(suite_file);
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    FILE* log = options->json ? stderr : stdout;  // with --json, stdout carries the document only
    std::fprintf(log, "suite %s: %zu case(s) from %s -> %s\n", suite.name.c_str(), suite.cases.size(),
                 suite.source.c_str(), suite_file.c_str());
    std::fflush(log);

    // Repeats interleaved across cases (every case's first run, then every second, ...), so that
    // a machine's drift lands on all of them alike.
    std::vector<std::pair<std::size_t, std::int64_t>> order;  // (case, repeat)
    std::int64_t most_repeats = 1;
    for (const auto& c : suite.cases) most_repeats = std::max(most_repeats, c.repeats);
    for (std::int64_t repeat = 1; repeat <= most_repeats; ++repeat)
      for (std::size_t i = 0; i < suite.cases.size(); ++i)
        if (suite.cases[i].repeats >= repeat) order.emplace_back(i, repeat);

    int failures = 0;
    for (std::size_t n = 0; n < order.size(); ++n) {
      const auto [i, repeat] = order[n];
      const auto& c = suite.cases[i];
      const std::string run_id = plan::repeat_run_id(c.id, repeat, c.repeats);
      const fs::path config_path = cases_dir / (file_id_of(c.id) + ".yaml");
      const fs::path result_path = cases_dir / (file_id_of(run_id) + ".h5");
      replace_file(config_path, plan::yaml_text(configs[i]) + "\n", "the case config");
      const std::string which = c.repeats == 1 ? "" : fmt::format(", repeat {}/{}", repeat, c.repeats);
      std::fprintf(log, "\n== case %zu/%zu: %s (%lld rank%s%s) ==\n", n + 1, order.size(), c.id.c_str(),
                   static_cast<long long>(c.world_size), c.world_size == 1 ? "" : "s", which.c_str());
      std::fflush(log);
      launch::prepare_mpirun_environment(c.world_size);
      fs::remove(result_path);
      const launch::ChildExit job = launch::spawn_and_wait_keeping_stderr(
          {SB_MPIEXEC, "-np", std::to_string(c.world_size), self, "train", "--config", config_path.string(), "--out",
           result_path.string(), "--run-id", run_id},
          "", options->json);
      const int code = job.code;
      if (code == train::kRequeueExitStatus) {
        ++failures;  // stopped by a signal after its checkpoint: the file says interrupted and why
        std::fprintf(stderr, "scalebench: case '%s' interrupted (exit %d); running the suite again resumes it\n",
                     c.id.c_str(), code);
      } else if (code != 0) {
        ++failures;
        std::fprintf(stderr, "scalebench: case '%s' failed (exit %d)\n", c.id.c_str(), code);
        // A rank killed outright leaves the file readable but "interrupted", or failed in words
        // that cannot name it: say what happened, naming the rank and its host where mpirun did.
        if (fs::exists(result_path))
          jobs::record_failed_rank(result_path, run_id, job.stderr_tail,
                                   fmt::format("before the run finished (mpirun exit {}); see the log", code), false);
      }
      if (fs::exists(result_path)) {
        io::copy_run(result_path, suite_file, run_id);
        io::write_group_attributes(suite_file, "/runs/" + run_id,
                                   {{"case", c.id}, {"repeat", repeat}, {"repeats", c.repeats},
                                    {"suite_order", static_cast<std::int64_t>(n + 1)}});
      }
    }
    std::vector<std::optional<measure::RepeatSpread>> spreads;
    for (const auto& c : suite.cases) spreads.push_back(record_repeat_spread(suite_file, c));

    if (options->json)
      std::puts(overview_json(suite, suite_file, failures).dump(2).c_str());
    else
      print_overview_table(suite_file);
    print_repeat_spreads(log, suite, spreads);
    return failures == 0 ? 0 : 1;
  };
}

}  // namespace sb::cli
