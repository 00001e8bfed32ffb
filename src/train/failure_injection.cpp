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

namespace sb::train {

namespace {

struct Injection {
  int rank = -1;
  long long step = -1;
  std::string mode;
};

std::optional<Injection> requested_injection() {
  const char* spec = std::getenv("SB_INJECT_FAILURE");
  if (!spec || !*spec) return std::nullopt;
  Injection in;
  char mode[16] = {};
  SB_USER_CHECK(std::sscanf(spec, "%d:%lld:%15s", &in.rank, &in.step, mode) == 3,
                "SB_INJECT_FAILURE '{}' is not RANK:STEP:error|kill|usr1|term|slow[P]", spec);
  in.mode = mode;
  return in;
}

}  // namespace

double slowdown_to_inject(int rank, std::int64_t step) {
  const std::optional<Injection> in = requested_injection();
  if (!in || in->mode.rfind("slow", 0) != 0 || in->rank != rank || step < in->step) return 0.0;
  const std::string percent = in->mode.substr(4);
  if (percent.empty()) return 0.3;
  int p = -1;
  SB_USER_CHECK(std::sscanf(percent.c_str(), "%d", &p) == 1 && p > 0 && p <= 1000,
                "SB_INJECT_FAILURE mode '{}' is not slow or slowP with P a percentage from 1 to 1000", in->mode);
  return p / 100.0;
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
