// SPDX-License-Identifier: Apache-2.0
// The collective log on calls written by hand: the step's calls in the order they were issued,
// each group's own index, the compute before each call measured from the end of the rank's last
// wait (a non-blocking call's wait counted where it happened, not where the call was issued),
// the wait in each, groups of one rank left out, and which steps are logged.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics/collective_log.hpp"
#include "metrics/step_comm_window.hpp"

namespace sb::metrics {
namespace {

using parallel::Collective;
using parallel::CommRecord;
using parallel::DataType;
using parallel::ReduceOp;
using parallel::Request;

// Only a name, a size and the records the test puts in its stats.
class NamedGroup final : public parallel::Communicator {
 public:
  NamedGroup(std::string name, int size) : name_(std::move(name)), size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void all_reduce(void*, std::int64_t, DataType, ReduceOp) override { unused(); }
  Request iall_reduce(void*, std::int64_t, DataType, ReduceOp) override { unused(); }
  void reduce_scatter(const void*, void*, std::int64_t, DataType, ReduceOp) override { unused(); }
  Request ireduce_scatter(const void*, void*, std::int64_t, DataType, ReduceOp) override { unused(); }
  void all_gather(const void*, void*, std::int64_t, DataType) override { unused(); }
  Request iall_gather(const void*, void*, std::int64_t, DataType) override { unused(); }
  Request iall_gatherv_in_place(void*, std::span<const std::int64_t>, DataType) override { unused(); }
  void broadcast(void*, std::int64_t, DataType, int) override { unused(); }
  void send(const void*, std::int64_t, DataType, int, int) override { unused(); }
  void recv(void*, std::int64_t, DataType, int, int) override { unused(); }
  Request isend(const void*, std::int64_t, DataType, int, int) override { unused(); }
  Request irecv(void*, std::int64_t, DataType, int, int) override { unused(); }
  void barrier() override { unused(); }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override { unused(); }

  // A completed call: issued at start_s, waited for from wait_start_s (-1: never), done at end_s.
  void completed(Collective collective, double start_s, double wait_start_s, double end_s) {
    CommRecord r;
    r.collective = collective;
    r.bytes = 1024;
    r.ranks = size_;
    r.start_s = start_s;
    r.wait_start_s = wait_start_s;
    r.seconds = end_s - start_s;
    r.blocking = wait_start_s == start_s;
    stats().record(r);
  }

 private:
  [[noreturn]] static void unused() { throw std::logic_error("not used by the collective log"); }
  std::string name_;
  int size_;
};

TEST(CollectiveLog, ComputeBeforeEachCallEndsAtTheLastWait) {
  NamedGroup dp("dp", 2), tp("tp", 2), alone("world", 1);
  StepCommWindow window({{&dp, 0}, {&tp, 4}, {&alone, 0}});
  dp.completed(Collective::all_reduce, 9.0, 9.0, 9.5);  // the step before: not this step's
  window.begin_step();
  // in order of completion, as the communicators record them; the step starts at 10.000
  alone.completed(Collective::barrier, 10.001, 10.001, 10.002);   // one rank: no row, but a wait
  tp.completed(Collective::all_reduce, 10.020, 10.020, 10.030);   // blocking
  tp.completed(Collective::all_reduce, 10.060, 10.060, 10.065);   // blocking, while dp's is in flight
  dp.completed(Collective::all_reduce, 10.050, 10.080, 10.090);   // issued at 10.050, waited for from 10.080
  dp.completed(Collective::all_gather, 10.070, -1, 10.075);       // a test found it done: no wait
  dp.completed(Collective::all_reduce, 10.095, 10.095, 10.100);   // blocking

  CollectiveLog log(10);
  log.add_step(3, 1, 10.0, window.calls());
  const auto& rows = log.rows();
  ASSERT_EQ(rows.size(), 5u);
  struct Expected {
    const char* group;
    std::int64_t root, index;
    const char* collective;
    std::int64_t blocking;
    double arrive_s, compute_before_s, wait_s, seconds;
  };
  const Expected expected[] = {{"tp", 4, 0, "all_reduce", 1, 0.020, 0.018, 0.010, 0.010},
                               {"dp", 0, 0, "all_reduce", 0, 0.050, 0.020, 0.010, 0.040},
                               {"tp", 4, 1, "all_reduce", 1, 0.060, 0.030, 0.005, 0.005},
                               {"dp", 0, 1, "all_gather", 0, 0.070, 0.005, 0.0, 0.005},
                               {"dp", 0, 2, "all_reduce", 1, 0.095, 0.005, 0.005, 0.005}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    const io::CollectiveRow& r = rows[i];
    EXPECT_EQ(r.step, 3);
    EXPECT_EQ(r.rank, 1);
    EXPECT_STREQ(r.group, expected[i].group);
    EXPECT_EQ(r.group_root, expected[i].root);
    EXPECT_EQ(r.index, expected[i].index);
    EXPECT_STREQ(r.collective, expected[i].collective);
    EXPECT_EQ(r.bytes, 1024);
    EXPECT_EQ(r.blocking, expected[i].blocking);
    EXPECT_NEAR(r.arrive_s, expected[i].arrive_s, 1e-9);
    EXPECT_NEAR(r.compute_before_s, expected[i].compute_before_s, 1e-9);
    EXPECT_NEAR(r.wait_s, expected[i].wait_s, 1e-9);
    EXPECT_NEAR(r.seconds, expected[i].seconds, 1e-9);
  }
}

TEST(CollectiveLog, LogsAtMostKMaxStepsSpreadOverTheRun) {
  const CollectiveLog short_run(10);
  for (std::int64_t step = 1; step <= 10; ++step) EXPECT_TRUE(short_run.logs(step)) << step;
  const CollectiveLog long_run(1000);  // every 4th step: 250 of them
  std::int64_t logged = 0;
  for (std::int64_t step = 1; step <= 1000; ++step) logged += long_run.logs(step) ? 1 : 0;
  EXPECT_EQ(logged, 250);
  EXPECT_TRUE(long_run.logs(1));
  EXPECT_FALSE(long_run.logs(2));
  EXPECT_TRUE(long_run.logs(5));
  EXPECT_LE(logged, CollectiveLog::kMaxSteps);
}

TEST(CollectiveLog, AStepNotLoggedAddsNoRows) {
  NamedGroup dp("dp", 2);
  StepCommWindow window({{&dp, 0}});
  window.begin_step();
  dp.completed(Collective::all_reduce, 1.0, 1.0, 1.1);
  CollectiveLog log(1000);
  log.add_step(2, 0, 0.5, window.calls());
  EXPECT_TRUE(log.rows().empty());
  log.add_step(5, 0, 0.5, window.calls());
  EXPECT_EQ(log.rows().size(), 1u);
}

}  // namespace
}  // namespace sb::metrics
