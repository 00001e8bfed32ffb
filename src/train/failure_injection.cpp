// Failures on demand (see failure_injection.hpp).
#include "train/failure_injection.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/check.hpp"

namespace sb::train {

void inject_failure_if_asked(int rank, std::int64_t step) {
  const char* spec = std::getenv("SB_INJECT_FAILURE");
  if (!spec || !*spec) return;
  int at_rank = -1;
  long long at_step = -1;
  char mode[16] = {};
  SB_USER_CHECK(std::sscanf(spec, "%d:%lld:%15s", &at_rank, &at_step, mode) == 3,
                "SB_INJECT_FAILURE '{}' is not RANK:STEP:error|kill|usr1|term", spec);
  if (at_rank != rank || at_step != step) return;
  if (std::string_view(mode) == "kill") std::raise(SIGKILL);
  if (std::string_view(mode) == "usr1") return static_cast<void>(std::raise(SIGUSR1));
  if (std::string_view(mode) == "term") return static_cast<void>(std::raise(SIGTERM));
  throw Error(fmt::format("injected failure (SB_INJECT_FAILURE={}) at step {}", spec, step));
}

}  // namespace sb::train
