// SPDX-License-Identifier: Apache-2.0
// The failure channel (a private duplicate of MPI_COMM_WORLD), the termination-signal flag and
// the report-then-abort path described in fault.hpp.
#include "parallel/fault.hpp"

#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "parallel/mpi_check.hpp"

namespace sb::parallel {

namespace {

constexpr int kFailureTag = 7701;
constexpr double kGraceSeconds = 10.0;  // how long a failing rank leaves rank 0 to act

// Process-wide on purpose (see fault.hpp): the signal handler and the failure path have no
// context to be handed.
volatile std::sig_atomic_t g_termination_signal = 0;
unsigned long g_deferred_signals = 0;  // bit n: signal n is left to the caller
MPI_Comm g_fault_comm = MPI_COMM_NULL;
int g_world_rank = -1;
std::optional<std::string> g_reported_failure;

extern "C" void on_termination_signal(int signal_number) { g_termination_signal = signal_number; }

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace

void fault_channel_init() {
  if (g_fault_comm != MPI_COMM_NULL) return;
  SB_CHECK(mpi_running(), "fault_channel_init needs MPI to be initialised");
  MPI_Comm comm = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  SB_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  SB_MPI_CHECK(MPI_Comm_set_name(comm, "scalebench-faults"));
  SB_MPI_CHECK(MPI_Comm_rank(comm, &g_world_rank));
  g_fault_comm = comm;
}

bool fault_channel_ready() { return g_fault_comm != MPI_COMM_NULL; }

void install_termination_handler() {
  struct sigaction action {};
  action.sa_handler = on_termination_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // system calls resume; the flag is read by the wait loops
  for (const int signal_number : {SIGTERM, SIGINT, SIGUSR1}) {
    SB_CHECK(sigaction(signal_number, &action, nullptr) == 0, "sigaction({}) failed",
             signal_number);
  }
}

int termination_signal() { return g_termination_signal; }

void defer_termination_signal(int signal_number) {
  SB_CHECK(signal_number > 0 && signal_number < 64, "signal {} out of range", signal_number);
  g_deferred_signals |= 1ul << signal_number;
}

void report_failure_and_abort(const std::string& message, int exit_code) {
  if (!mpi_running()) {
    std::fprintf(stderr, "scalebench: %s failed: %s\n", where_am_i().c_str(), message.c_str());
    std::fflush(stderr);
    std::_Exit(exit_code);
  }
  const std::string report = fmt::format("{} failed: {}", where_am_i(), message);
  std::fprintf(stderr, "scalebench: %s\n", report.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  if (fault_channel_ready() && g_world_rank != 0) {
    // Best effort, without checks: this path must end in MPI_Abort whatever MPI says.
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(report.data(), static_cast<int>(report.size()), MPI_CHAR, 0, kFailureTag,
                  g_fault_comm, &request) == MPI_SUCCESS) {
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(kGraceSeconds);
      // Rank 0 normally takes the job down within milliseconds of receiving the report; the
      // loop keeps MPI progressing the send until then (the process is killed inside it).
      while (std::chrono::steady_clock::now() < deadline) {
        int done = 0;
        if (request != MPI_REQUEST_NULL) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::optional<std::string> poll_reported_failure() {
  if (g_reported_failure || !fault_channel_ready() || g_world_rank != 0) return g_reported_failure;
  int arrived = 0;
  MPI_Status status;
  SB_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, g_fault_comm, &arrived, &status));
  if (!arrived) return std::nullopt;
  int length = 0;
  SB_MPI_CHECK(MPI_Get_count(&status, MPI_CHAR, &length));
  std::string report(static_cast<std::size_t>(length), '\0');
  SB_MPI_CHECK(MPI_Recv(report.data(), length, MPI_CHAR, status.MPI_SOURCE, kFailureTag,
                        g_fault_comm, MPI_STATUS_IGNORE));
  g_reported_failure = std::move(report);
  return g_reported_failure;
}

void throw_if_job_failing() {
  if (const int signal_number = termination_signal();
      signal_number != 0 && !(g_deferred_signals & (1ul << signal_number))) {
    throw RankFailure(fmt::format("{}: terminated by signal {}", where_am_i(), signal_number));
  }
  if (auto report = poll_reported_failure()) throw RankFailure(*report);
}

}  // namespace sb::parallel
