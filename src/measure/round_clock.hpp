// SPDX-License-Identifier: Apache-2.0
// How the harness clocks a round of calls: this process alone (its steady clock), or every rank
// of a communicator together (a barrier before, the slowest rank's seconds after). Each may wait
// for what the calls left in flight (a Kokkos fence, non-blocking requests, a device queue)
// before it reads the clock. Leaves out what is timed and how often (timing.hpp).
#pragma once

#include <mpi.h>

#include <functional>

#include "parallel/communicator.hpp"

namespace sb::measure {

class RoundClock {
 public:
  virtual ~RoundClock() = default;
  virtual void start() = 0;   // before a round's first call
  virtual double stop() = 0;  // after its last call (settled): the round's seconds
  // Waits for what calls left in flight; the harness also calls it after the warm-ups.
  virtual void settle() {}
};

// This process: the steady clock (parallel::comm_clock_seconds), `settle` run before it is read.
class HostClock final : public RoundClock {
 public:
  explicit HostClock(std::function<void()> settle = {}) : settle_(std::move(settle)) {}
  void start() override;
  double stop() override;
  void settle() override {
    if (settle_) settle_();
  }

 private:
  std::function<void()> settle_;
  double start_s_ = 0;
};

// Every rank of `comm` (collective): all ranks start after a barrier; the round's seconds are
// the slowest rank's (MPI_MAX). Raw MPI, so a Communicator's call records stay untouched.
class MpiClock final : public RoundClock {
 public:
  explicit MpiClock(MPI_Comm comm, std::function<void()> settle = {}) : comm_(comm), settle_(std::move(settle)) {}
  void start() override;
  double stop() override;
  void settle() override {
    if (settle_) settle_();
  }

 private:
  MPI_Comm comm_;
  std::function<void()> settle_;
  double start_s_ = 0;
};

// As MpiClock, through a Communicator (its barrier and a host all-reduce of the seconds): for
// communicators whose barrier also waits for their device queue (NCCL).
class CommunicatorClock final : public RoundClock {
 public:
  explicit CommunicatorClock(parallel::Communicator& comm, std::function<void()> settle = {})
      : comm_(comm), settle_(std::move(settle)) {}
  void start() override;
  double stop() override;
  void settle() override {
    if (settle_) settle_();
  }

 private:
  parallel::Communicator& comm_;
  std::function<void()> settle_;
  double start_s_ = 0;
};

}  // namespace sb::measure
