// SPDX-License-Identifier: Apache-2.0
// A job that fails on purpose, run by mpirun under ctest (the job is aborted, so GoogleTest
// cannot judge it: ctest matches the verdict line "FAULT TEST PASSED" that rank 0 prints).
//   fault_driver report : rank 1 calls report_failure_and_abort while rank 0 waits in a
//                         blocking all-reduce; rank 0 must get RankFailure naming rank 1 fast.
//   fault_driver signal : rank 0 receives SIGTERM and then waits for a message that never
//                         comes (the others wait in an all-reduce); rank 0 must get
//                         RankFailure("... terminated by signal 15") and take the job down.
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "parallel/communicator.hpp"
#include "parallel/fault.hpp"

namespace {

using namespace sb::parallel;
using Clock = std::chrono::steady_clock;

constexpr double kMaxSecondsToNotice = 5.0;
constexpr int kAbortCode = 17;

// Rank 0's verdict, then the whole job goes down the way a real failure would.
[[noreturn]] void finish(bool passed, const std::string& detail) {
  std::printf("%s: %s\n", passed ? "FAULT TEST PASSED" : "FAULT TEST FAILED", detail.c_str());
  std::fflush(stdout);
  report_failure_and_abort(detail, kAbortCode);
}

int run(const std::string& mode) {
  auto world = make_mpi_world_communicator();
  install_termination_handler();
  std::vector<float> data(1 << 16, 1.0f);
  world->all_reduce(std::span<float>(data));  // everyone is up and connected
  const bool rank0 = world->rank() == 0;

  if (mode == "report" && world->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    report_failure_and_abort("injected failure for the fault test", kAbortCode);
  }
  if (mode == "signal" && rank0) std::raise(SIGTERM);

  const auto start = Clock::now();
  try {
    if (mode == "signal" && rank0) {
      world->recv(data.data(), 1, DataType::f32, 1, 99);  // never sent
    } else {
      world->all_reduce(std::span<float>(data));  // never completes: a rank is missing
    }
    if (rank0) finish(false, "the all-reduce completed although a rank had failed");
  } catch (const RankFailure& e) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string what = e.what();
    if (!rank0 && mode == "report") return 1;  // only rank 0 hears reports
    const std::string expected = mode == "report" ? "rank 1 on " : "terminated by signal 15";
    const bool named = what.find(expected) != std::string::npos &&
                       (mode != "report" || what.find("injected failure") != std::string::npos);
    const bool fast = seconds < kMaxSecondsToNotice;
    if (rank0) {
      finish(named && fast, "rank 0 got RankFailure after " + std::to_string(seconds) + " s: " + what);
    }
    report_failure_and_abort(what, kAbortCode);
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "report";
  const int code = run(mode);
  MPI_Finalize();
  return code;
}
