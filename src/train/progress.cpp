// Progress line formatting.
#include "train/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sb::train {

namespace {
// SB_PROGRESS=terminal|lines overrides the check: under mpirun every rank's stdout is a
// pseudo-terminal even when the launcher's output goes to a file.
bool stdout_is_terminal() {
  if (const char* mode = std::getenv("SB_PROGRESS"); mode && *mode) return std::string(mode) == "terminal";
  return isatty(fileno(stdout)) != 0;
}
}  // namespace

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
      enabled_(enabled),
      terminal_(stdout_is_terminal()),
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
