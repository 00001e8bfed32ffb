// posix_spawnp and waitpid.
#include "cli/child_process.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "core/check.hpp"

extern char** environ;

namespace sb::cli {

int spawn_and_wait(const std::vector<std::string>& args, const std::string& advice) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  SB_USER_CHECK(err == 0, "cannot start '{}': {}{}", args[0], std::strerror(err), advice.empty() ? "" : "; " + advice);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace sb::cli
