// SPDX-License-Identifier: Apache-2.0
// The progress line of long work on rank 0: step, loss, tokens/s and ETA; redrawn in place
// (\r\033[K) only on the terminal of a single process, one plain line every N steps otherwise.
// Leaves out multi-rank aggregation.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sb::train {

enum class ProgressMode { tty, plain, off };

// SB_PROGRESS (terminal|tty, lines|plain, off: what `--progress` and `run` set) when set; else
// plain under a multi-process launcher (Open MPI, PMI/PMIx, srun, flux run), whose ranks' stdout
// is a pseudo-terminal even when the log goes to a file; else tty when stdout is a terminal.
ProgressMode progress_mode();

class ProgressLine {
 public:
  // rate_unit names what the rate counts ("tok/s", "img/s").
  ProgressLine(std::string label, std::int64_t total_steps, std::int64_t every, bool enabled,
               std::string rate_unit);
  void update(std::int64_t step, double loss, double rate, double step_time_s);
  void message(const std::string& text);  // a full line (eval results), not overwritten
  void finish();

 private:
  std::string label_, rate_unit_;
  std::int64_t total_, every_;
  bool enabled_, terminal_, line_open_ = false;
  std::chrono::steady_clock::time_point start_;
};

std::string format_duration(double seconds);

}  // namespace sb::train
