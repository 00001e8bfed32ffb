// SPDX-License-Identifier: Apache-2.0
// Failures on demand (see failure_injection.hpp).
#include "train/failure_injection.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/check.hpp"
#include "core/environment.hpp"

namespace sb::train {

namespace {

struct Injection {
  int rank = -1;
  long long step = -1;
  std::string mode;
};

// SB_INJECT_FAILURE=RANK:STEP:MODE, each part checked: a typo must not pass as "no failure".
std::optional<Injection> requested_injection() {
  const std::optional<std::string> spec = environment_text("SB_INJECT_FAILURE");
  if (!spec) return std::nullopt;
  const auto first = spec->find(':'), second = spec->find(':', first == std::string::npos ? first : first + 1);
  const auto rank = parse_bounded_integer(spec->substr(0, first), 0, 1 << 24);
  const auto step = first == std::string::npos ? std::nullopt
                                               : parse_bounded_integer(spec->substr(first + 1, second - first - 1), 0,
                                                                       std::int64_t{1} << 40);
  Injection in;
  if (second != std::string::npos) in.mode = spec->substr(second + 1);
  const bool known_mode = in.mode == "error" || in.mode == "kill" || in.mode == "usr1" || in.mode == "term" ||
                          in.mode.rfind("slow", 0) == 0;
  SB_USER_CHECK(rank && step && known_mode, "SB_INJECT_FAILURE '{}' is not RANK:STEP:error|kill|usr1|term|slow[P]",
                spec->substr(0, 60));
  in.rank = static_cast<int>(*rank);
  in.step = *step;
  return in;
}

// The P of mode slowP as a fraction; 0.3 for plain "slow".
double slowdown_of_mode(const std::string& mode) {
  const std::string percent = mode.substr(4);
  if (percent.empty()) return 0.3;
  const std::optional<std::int64_t> p = parse_bounded_integer(percent, 1, 1000);
  SB_USER_CHECK(p.has_value(),
                "SB_INJECT_FAILURE mode '{}' is not slow or slowP with P a percentage from 1 to 1000", mode.substr(0, 40));
  return static_cast<double>(*p) / 100.0;
}

}  // namespace

std::int64_t overflow_step_to_inject(int world_rank) {
  const std::optional<std::string> spec = environment_text("SB_INJECT_OVERFLOW");
  if (!spec) return 0;
  const auto colon = spec->find(':');
  const auto step = parse_bounded_integer(spec->substr(0, colon), 1, std::int64_t{1} << 40);
  const auto rank = colon == std::string::npos ? std::optional<std::int64_t>(-1)
                                               : parse_bounded_integer(spec->substr(colon + 1), 0, 1 << 24);
  SB_USER_CHECK(step && rank, "SB_INJECT_OVERFLOW '{}' is not STEP or STEP:RANK (a 1-based step, a world rank)",
                spec->substr(0, 60));
  return *rank < 0 || *rank == world_rank ? *step : 0;
}

void check_injection_environment() {
  const std::optional<Injection> in = requested_injection();
  if (in && in->mode.rfind("slow", 0) == 0) slowdown_of_mode(in->mode);
  overflow_step_to_inject(0);
}

double slowdown_to_inject(int rank, std::int64_t step) {
  const std::optional<Injection> in = requested_injection();
  if (!in || in->mode.rfind("slow", 0) != 0 || in->rank != rank || step < in->step) return 0.0;
  return slowdown_of_mode(in->mode);
}

void inject_failure_if_asked(int rank, std::int64_t step) {
  const std::optional<Injection> in = requested_injection();
  if (!in || in->mode.rfind("slow", 0) == 0 || in->rank != rank || in->step != step) return;
  if (in->mode == "kill") std::raise(SIGKILL);
  if (in->mode == "usr1") return static_cast<void>(std::raise(SIGUSR1));
  if (in->mode == "term") return static_cast<void>(std::raise(SIGTERM));
  throw Error(fmt::format("injected failure (SB_INJECT_FAILURE={}) at step {}", std::getenv("SB_INJECT_FAILURE"), step));
}

}  // namespace sb::train
