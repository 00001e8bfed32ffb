// SPDX-License-Identifier: Apache-2.0
// Progress line formatting.
#include "train/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/environment.hpp"

namespace sb::train {

namespace {

// A multi-process launcher started us (mpirun, mpiexec, srun, flux run): our stdout is a
// pseudo-terminal or a pipe to it, and where it ends (a file, a job log) is not ours to see.
bool under_a_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS",
                           "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "FLUX_TASK_RANK"})
    if (const char* value = std::getenv(name); value && *value) return true;
  return false;
}

}  // namespace

ProgressMode progress_mode() {
  if (const std::optional<std::string> m = environment_choice("SB_PROGRESS", {"terminal", "tty", "lines", "plain", "off"})) {
    if (*m == "terminal" || *m == "tty") return ProgressMode::tty;
    if (*m == "off") return ProgressMode::off;
    return ProgressMode::plain;
  }
  if (under_a_launcher()) return ProgressMode::plain;
  return isatty(fileno(stdout)) != 0 ? ProgressMode::tty : ProgressMode::plain;
}


std::string format_duration(double seconds) {
  if (!(seconds >= 0)) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

ProgressLine::ProgressLine(std::string label, std::int64_t total_steps, std::int64_t every,
                           bool enabled, std::string rate_unit)
    : label_(std::move(label)),
      rate_unit_(std::move(rate_unit)),
      total_(total_steps),
      every_(every),
      enabled_(enabled && progress_mode() != ProgressMode::off),
      terminal_(progress_mode() == ProgressMode::tty),
      start_(std::chrono::steady_clock::now()) {}

void ProgressLine::update(std::int64_t step, double loss, double rate, double step_time_s) {
  if (!enabled_) return;
  const bool last = step + 1 == total_;
  if (!terminal_ && !last && (step + 1) % every_ != 0 && step != 0) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = elapsed / static_cast<double>(step + 1) * static_cast<double>(total_ - step - 1);
  const auto text = fmt::format("[{}] step {:>{}}/{} | loss {:.4f} | {:.0f} {} | {:.1f} ms/step | ETA {}",
                                label_, step + 1, std::to_string(total_).size(), total_, loss,
                                rate, rate_unit_, step_time_s * 1e3, format_duration(eta));
  if (terminal_) {
    std::fputs(("\r\033[K" + text).c_str(), stdout);
    line_open_ = true;
  } else {
    std::puts(text.c_str());
  }
  std::fflush(stdout);
}

void ProgressLine::message(const std::string& text) {
  if (!enabled_) return;
  if (line_open_) std::fputs("\r\033[K", stdout);
  std::puts(fmt::format("[{}] {}", label_, text).c_str());
  line_open_ = false;
  std::fflush(stdout);
}

void ProgressLine::finish() {
  if (enabled_ && line_open_) std::fputs("\n", stdout);
  line_open_ = false;
  std::fflush(stdout);
}

}  // namespace sb::train
