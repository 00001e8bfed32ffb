// SPDX-License-Identifier: Apache-2.0
// posix_spawnp and waitpid; the child starts on the CPUs this process started on.
#include "launch/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.hpp"
#include "core/cpu_affinity.hpp"

extern char** environ;

namespace sb::launch {

namespace {

pid_t spawn(const std::vector<std::string>& args, const std::string& advice, bool stdout_to_stderr = false,
            int stderr_to = -1) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  // With OMP_PROC_BIND set, libgomp bound this thread to one core; a child would inherit that
  // core alone and its ranks and threads would share it.
  const StartAffinityScope start_cpus;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stderr_to >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_to, STDERR_FILENO);
  if (stdout_to_stderr) posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  const int err = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  SB_USER_CHECK(err == 0, "cannot start '{}': {}{}", args[0], std::strerror(err), advice.empty() ? "" : "; " + advice);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Copies everything from `fd` to our standard error until end of file, keeping the last
// keep_bytes.
std::string pass_through_keeping_tail(int fd, std::size_t keep_bytes) {
  std::string tail;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (ssize_t done = 0; done < got;) {  // our stderr going away must not stop the child
      const ssize_t put = write(STDERR_FILENO, buffer + done, static_cast<std::size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) break;
      done += put;
    }
    tail.append(buffer, static_cast<std::size_t>(got));
    if (tail.size() > 2 * keep_bytes) tail.erase(0, tail.size() - keep_bytes);
  }
  if (tail.size() > keep_bytes) tail.erase(0, tail.size() - keep_bytes);
  return tail;
}

}  // namespace

ChildExit spawn_and_wait_keeping_stderr(const std::vector<std::string>& args, const std::string& advice,
                                        bool stdout_to_stderr, std::size_t keep_bytes) {
  int fds[2] = {-1, -1};
  SB_CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe2 for the standard error of '{}' failed: {}", args.at(0),
           std::strerror(errno));
  pid_t pid = 0;
  try {
    pid = spawn(args, advice, stdout_to_stderr, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  ChildExit result;
  result.stderr_tail = pass_through_keeping_tail(fds[0], keep_bytes);
  close(fds[0]);
  result.code = wait_for(pid);
  return result;
}

int spawn_and_wait(const std::vector<std::string>& args, const std::string& advice, bool stdout_to_stderr) {
  return wait_for(spawn(args, advice, stdout_to_stderr));
}

std::vector<int> spawn_all_and_wait(const std::vector<std::vector<std::string>>& commands, const std::string& advice) {
  std::vector<pid_t> pids;
  try {
    for (const auto& args : commands) pids.push_back(spawn(args, advice));
  } catch (...) {
    for (pid_t pid : pids) wait_for(pid);  // the started ones end on their own; reap them
    throw;
  }
  std::vector<int> codes;
  for (pid_t pid : pids) codes.push_back(wait_for(pid));
  return codes;
}

}  // namespace sb::launch
