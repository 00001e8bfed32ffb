// SPDX-License-Identifier: Apache-2.0
// The records every call leaves in CommStats (nccl-tests sizes, ranks, algorithm, bandwidths,
// window sums, switching off) and the bus-bandwidth formula itself.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "mpi_test_environment.hpp"
#include "parallel/bandwidth.hpp"
#include "parallel/communicator.hpp"

namespace sb::parallel {
namespace {

using testing::world;

TEST(BusBandwidth, FactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::send, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::recv, 2), 1.0);
}

TEST(BusBandwidth, SizesAndBandwidths) {
  EXPECT_EQ(collective_bytes(Collective::all_reduce, 1000, 4, 4), 4000);
  EXPECT_EQ(collective_bytes(Collective::reduce_scatter, 1000, 4, 4), 16000);
  EXPECT_EQ(collective_bytes(Collective::all_gather, 10, 8, 3), 240);
  EXPECT_EQ(collective_bytes(Collective::broadcast, 10, 8, 3), 80);
  EXPECT_EQ(collective_bytes(Collective::barrier, 10, 8, 3), 0);
  // 1 GB in 0.5 s on 4 ranks: algbw 2 GB/s, all-reduce busbw 3 GB/s.
  const Bandwidth all_reduce = collective_bandwidth(Collective::all_reduce, 1'000'000'000, 4, 0.5);
  EXPECT_DOUBLE_EQ(all_reduce.algbw_gbps, 2.0);
  EXPECT_DOUBLE_EQ(all_reduce.busbw_gbps, 3.0);
  const Bandwidth gather = collective_bandwidth(Collective::all_gather, 1'000'000'000, 4, 0.5);
  EXPECT_DOUBLE_EQ(gather.busbw_gbps, 1.5);
  EXPECT_DOUBLE_EQ(collective_bandwidth(Collective::all_reduce, 100, 2, 0.0).busbw_gbps, 0.0);
}

void expect_consistent(const CommRecord& record) {
  EXPECT_EQ(record.algorithm, "mpi");
  EXPECT_GE(record.seconds, 0.0);
  EXPECT_GE(record.start_s, 0.0);
  EXPECT_LE(record.start_s + record.seconds, comm_clock_seconds());
  if (record.seconds > 0) {
    EXPECT_NEAR(record.algbw_gbps, record.bytes / record.seconds / 1e9, 1e-9 * record.algbw_gbps + 1e-12);
    EXPECT_NEAR(record.busbw_gbps, record.algbw_gbps * bus_bandwidth_factor(record.collective, record.ranks),
                1e-9 * record.algbw_gbps + 1e-12);
  }
}

TEST(CommStats, EveryCallRecordedWithItsNcclTestsSize) {
  Communicator& comm = world();
  const int n = comm.size();
  comm.stats().clear();
  std::vector<float> buffer(1000 * static_cast<std::size_t>(n), 1.0f);
  std::vector<float> out(1000 * static_cast<std::size_t>(n));
  comm.all_reduce(buffer.data(), 1000, DataType::f32, ReduceOp::sum);
  comm.reduce_scatter(buffer.data(), out.data(), 10, DataType::f32, ReduceOp::sum);
  comm.all_gather(buffer.data(), out.data(), 10, DataType::f32);
  comm.broadcast(buffer.data(), 10, DataType::f32, 0);
  comm.iall_reduce(buffer.data(), 6, DataType::f64, ReduceOp::sum).wait();
  comm.barrier();

  const auto& records = comm.stats().records();
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].collective, Collective::all_reduce);
  EXPECT_EQ(records[0].bytes, 4000);
  EXPECT_EQ(records[1].collective, Collective::reduce_scatter);
  EXPECT_EQ(records[1].bytes, n * 10 * 4);
  EXPECT_EQ(records[2].collective, Collective::all_gather);
  EXPECT_EQ(records[2].bytes, n * 10 * 4);
  EXPECT_EQ(records[3].collective, Collective::broadcast);
  EXPECT_EQ(records[3].bytes, 40);
  EXPECT_EQ(records[4].collective, Collective::all_reduce);
  EXPECT_EQ(records[4].bytes, 48);
  EXPECT_FALSE(records[4].blocking);
  EXPECT_EQ(records[5].collective, Collective::barrier);
  EXPECT_EQ(records[5].bytes, 0);
  for (std::size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(records[i].ranks, n);
    EXPECT_EQ(records[i].blocking, i != 4);
    expect_consistent(records[i]);
  }
  EXPECT_EQ(comm.stats().bytes_since(0), 4000 + 2 * n * 40 + 40 + 48);
  EXPECT_EQ(comm.stats().bytes_since(4), 48);
  double seconds = 0;
  for (std::size_t i = 1; i < records.size(); ++i) seconds += records[i].seconds;
  EXPECT_DOUBLE_EQ(comm.stats().seconds_since(1), seconds);
  comm.stats().clear();
}

TEST(CommStats, PointToPointRecordsAndLargeCallBandwidth) {
  Communicator& comm = world();
  comm.stats().clear();
  const std::int64_t count = 1 << 20;  // 4 MiB: long enough for a meaningful bandwidth
  std::vector<float> data(static_cast<std::size_t>(count), 1.0f);
  comm.all_reduce(data.data(), count, DataType::f32, ReduceOp::sum);
  if (comm.rank() < 2) {
    const int partner = 1 - comm.rank();
    Request receive = comm.irecv(data.data(), 100, DataType::f32, partner, 9);
    comm.send(data.data() + 100, 100, DataType::f32, partner, 9);
    receive.wait();
  }
  const auto& records = comm.stats().records();
  ASSERT_EQ(records.size(), comm.rank() < 2 ? 3u : 1u);
  EXPECT_EQ(records[0].bytes, count * 4);
  EXPECT_GT(records[0].seconds, 0.0);
  EXPECT_GT(records[0].busbw_gbps, 0.0);
  expect_consistent(records[0]);
  if (comm.rank() < 2) {
    // completion order: the blocking send, then the receive's wait
    EXPECT_EQ(records[1].collective, Collective::send);
    EXPECT_EQ(records[2].collective, Collective::recv);
    for (std::size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(records[i].bytes, 400);
      EXPECT_EQ(records[i].ranks, 2);
      expect_consistent(records[i]);
    }
  }
  comm.stats().clear();
}

TEST(CommStats, DisabledStatsRecordNothing) {
  Communicator& comm = world();
  comm.stats().clear();
  comm.stats().set_enabled(false);
  EXPECT_EQ(comm.all_reduce_value(1.0), static_cast<double>(comm.size()));
  comm.barrier();
  EXPECT_TRUE(comm.stats().records().empty());
  comm.stats().set_enabled(true);
  comm.barrier();
  EXPECT_EQ(comm.stats().records().size(), 1u);
  comm.stats().clear();
}

TEST(CommStats, CollectiveNames) {
  EXPECT_EQ(to_string(Collective::all_reduce), "all_reduce");
  EXPECT_EQ(to_string(Collective::reduce_scatter), "reduce_scatter");
  EXPECT_EQ(to_string(Collective::all_gather), "all_gather");
}

}  // namespace
}  // namespace sb::parallel
