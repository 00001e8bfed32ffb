// SPDX-License-Identifier: Apache-2.0
// How one rank's failure ends the whole MPI job within seconds instead of hanging the others in
// a collective. Leaves out writing the failure into the result file (the trainer does that when
// it catches RankFailure) and checkpoint/restart.
//
// The protocol:
//   * Every rank calls fault_channel_init() once, collectively, after MPI_Init
//     (make_mpi_world_communicator does it). It duplicates MPI_COMM_WORLD into a private
//     communicator that carries only failure reports.
//   * A rank that cannot go on calls report_failure_and_abort(message, code): it sends
//     "rank R on HOST failed: message" to world rank 0 (non-blocking), prints it on stderr,
//     gives rank 0 up to ~10 s to take the job down, then calls MPI_Abort(code) itself.
//   * World rank 0 sees the report inside any blocking communicator call (the wait loop polls the
//     channel about every millisecond) as RankFailure("rank R on HOST failed: ..."). It should
//     record the failure (result file status "failed", error = what()) and then call
//     report_failure_and_abort(what(), code), which on rank 0 aborts at once.
//   * SIGTERM, SIGINT and SIGUSR1 (install_termination_handler) only set a flag; the next wait
//     loop iteration on that rank throws RankFailure("terminated by signal N"). Code that runs
//     long without communicating should check termination_signal() itself (e.g. per step).
//
// MPI_Abort under Open MPI 4.1's mpirun: the aborting process tells its daemon, and every
// daemon kills every process of the job: SIGCONT, then SIGTERM, then SIGKILL
// odls_base_sigkill_timeout seconds later (default 1 s). mpirun exits with the code passed to
// MPI_Abort and prints an "MPI_ABORT was invoked" banner. With the handler installed, the other
// ranks' SIGTERM arrives as RankFailure("terminated by signal 15") if they are in a wait loop,
// giving them about one second to mark their files "interrupted" before SIGKILL. Without the
// handler, SIGTERM ends them at once. Either way nothing waits forever: the failing rank's own
// MPI_Abort after ~10 s bounds the time even when rank 0 never polls.
// Under srun, MPI_Abort likewise ends the job step (Slurm's KillWait applies instead).
#pragma once

#include <optional>
#include <string>

#include "core/check.hpp"

namespace sb::parallel {

// Another rank failed, or this process was asked to terminate. what() names the rank and host.
class RankFailure : public sb::Error {
 public:
  using sb::Error::Error;
};

// Collective over MPI_COMM_WORLD, once per process (later calls do nothing). MPI must be
// initialised. The private communicator is process-wide state by necessity: the failure path
// must reach it from anywhere, including code that holds no communicator.
void fault_channel_init();
bool fault_channel_ready();

// SIGTERM, SIGINT and SIGUSR1 set a flag (async-signal-safe) instead of ending the process.
void install_termination_handler();
// The signal number received since install_termination_handler, 0 when none.
int termination_signal();
// Leaves `signal_number` to the caller: throw_if_job_failing no longer throws for it, so a rank
// that receives it finishes its step's collectives. The trainer defers SIGUSR1 (the scheduler's
// notice, Slurm --signal) to its next step boundary, where every rank agrees to checkpoint and
// stop. SIGTERM stays immediate: mpirun sends it when another rank died.
void defer_termination_signal(int signal_number);

// Reports the failure to world rank 0 and ends the job (see above). Never returns. Works
// before fault_channel_init (then it only prints and aborts) and outside MPI (then it exits).
[[noreturn]] void report_failure_and_abort(const std::string& message, int exit_code);

// On world rank 0: a failure reported by another rank, if one arrived (non-blocking; the first
// report is kept and returned again by later calls). Always nullopt on other ranks.
std::optional<std::string> poll_reported_failure();

// What a wait loop calls about every millisecond: throws RankFailure when a termination
// signal arrived (any rank) or a failure was reported (world rank 0).
void throw_if_job_failing();

}  // namespace sb::parallel
