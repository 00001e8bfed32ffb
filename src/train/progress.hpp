// The progress line of long work on rank 0: step, loss, tokens/s and ETA; redrawn in place
// on a terminal, one line every N steps otherwise. Leaves out multi-rank aggregation.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sb::train {

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
