// SPDX-License-Identifier: Apache-2.0
// The NCCL communicator on device buffers: every collective and type against values known on
// the host, messages between ranks, a non-blocking all-reduce, a split, a host buffer routed to
// MPI, and the records CommStats keeps. Runs under mpirun, one rank per GPU; without a GPU, or
// with fewer GPUs than ranks, every test skips saying how many GPUs it saw. Values are small
// integers, so float sums are exact and any rank count has one expected answer.
// Leaves out the fault path (tests/parallel/fault_driver.cpp covers the MPI side).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"
#include "../parallel/rank_failure_printer.hpp"
#include "parallel/bandwidth.hpp"
#include "parallel/communicator.hpp"
#include "parallel/nccl_communicator.hpp"

namespace sb::parallel {
namespace {

using kernels::cuda::DeviceBuffer;

// Test-binary state, set in main() before the tests and cleared after.
std::unique_ptr<Communicator> g_nccl;
std::string g_skip_reason;

// Every test here derives from the CUDA fixture (skips without a GPU), then skips when main()
// could not give each rank a GPU of its own.
class NcclTest : public kernels::testing::CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    if (!g_nccl) GTEST_SKIP() << g_skip_reason;
  }
  Communicator& comm() { return *g_nccl; }
};

// Rank r's element i before a reduction.
template <class T>
T contribution(int rank, std::int64_t i) {
  return static_cast<T>(rank + 1 + i % 7);
}

template <class T>
std::vector<T> contributions(int rank, std::int64_t count) {
  std::vector<T> values(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) values[static_cast<std::size_t>(i)] = contribution<T>(rank, i);
  return values;
}

template <class T>
T reduced(ReduceOp op, int ranks, std::int64_t i) {
  const std::int64_t base = i % 7;
  if (op == ReduceOp::sum) return static_cast<T>(ranks * (ranks + 1) / 2 + ranks * base);
  if (op == ReduceOp::max) return static_cast<T>(ranks + base);
  return static_cast<T>(1 + base);
}

template <class T>
std::int64_t count_reduce_mismatches(const std::vector<T>& data, ReduceOp op, int ranks,
                                     std::int64_t first_index = 0) {
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < data.size(); ++i)
    mismatches += data[i] != reduced<T>(op, ranks, first_index + static_cast<std::int64_t>(i));
  return mismatches;
}

const char* op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min";
}

template <class T>
class NcclAllReduceTest : public NcclTest {};
using ElementTypes = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(NcclAllReduceTest, ElementTypes);

// 1, an odd count, and ~1M elements (NCCL's ring/tree switch and several chunks).
TYPED_TEST(NcclAllReduceTest, EveryOpOnDeviceBuffers) {
  using T = TypeParam;
  Communicator& comm = this->comm();
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    for (const std::int64_t count : {std::int64_t{1}, std::int64_t{1001}, std::int64_t{(1 << 20) + 3}}) {
      DeviceBuffer<T> data(contributions<T>(comm.rank(), count));
      comm.all_reduce(data.data(), count, data_type_of<T>(), op);
      EXPECT_EQ(count_reduce_mismatches(data.to_host(), op, comm.size()), 0)
          << op_name(op) << " of " << count << " elements";
    }
  }
}

// A buffer still being written on another blocking stream (as a CudaContext's kernels write
// gradients) is reduced after the write: 256 MiB of memset is long enough to lose a race.
TEST_F(NcclTest, OrderedAfterWorkOnBlockingStreams) {
  const std::int64_t count = std::int64_t{64} << 20;
  DeviceBuffer<std::int32_t> data(count);
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaStreamCreate(&producer), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(data.data(), 0, data.bytes(), producer), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(data.data(), 1, data.bytes(), producer), cudaSuccess);  // 0x01010101
  comm().all_reduce(data.data(), count, DataType::i32, ReduceOp::sum);
  ASSERT_EQ(cudaStreamSynchronize(producer), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(producer), cudaSuccess);
  const std::vector<std::int32_t> reduced_values = data.to_host();
  std::int64_t mismatches = 0;
  for (const std::int32_t value : reduced_values) mismatches += value != 0x01010101 * comm().size();
  EXPECT_EQ(mismatches, 0);
}

TEST_F(NcclTest, ReduceScatterGivesEachRankItsBlock) {
  const int n = comm().size();
  const std::int64_t block = 1001;
  // Rank r's send block b, element k: the contribution of element b·block + k.
  DeviceBuffer<float> send(contributions<float>(comm().rank(), n * block));
  DeviceBuffer<float> recv(block);
  comm().reduce_scatter(send.data(), recv.data(), block, DataType::f32, ReduceOp::sum);
  EXPECT_EQ(count_reduce_mismatches(recv.to_host(), ReduceOp::sum, n, comm().rank() * block), 0);
}

// Rank r contributes r·1000 + k; the gathered buffer holds every rank's block in rank order.
std::int64_t count_gather_mismatches(const std::vector<std::int32_t>& gathered, std::int64_t block) {
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < gathered.size(); ++i) {
    const auto index = static_cast<std::int64_t>(i);
    mismatches += gathered[i] != static_cast<std::int32_t>(index / block * 1000 + index % block);
  }
  return mismatches;
}

TEST_F(NcclTest, AllGatherSeparateAndInPlace) {
  const int n = comm().size(), r = comm().rank();
  const std::int64_t block = 333;
  std::vector<std::int32_t> mine(static_cast<std::size_t>(block));
  for (std::int64_t k = 0; k < block; ++k) mine[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(r * 1000 + k);

  DeviceBuffer<std::int32_t> send(mine);
  DeviceBuffer<std::int32_t> recv(n * block);
  comm().all_gather(send.data(), recv.data(), block, DataType::i32);
  EXPECT_EQ(count_gather_mismatches(recv.to_host(), block), 0) << "separate buffers";

  // In place: this rank's block already sits at its offset in the output.
  std::vector<std::int32_t> whole(static_cast<std::size_t>(n * block), -1);
  std::copy(mine.begin(), mine.end(), whole.begin() + r * block);
  DeviceBuffer<std::int32_t> in_place(whole);
  comm().all_gather(in_place.data() + r * block, in_place.data(), block, DataType::i32);
  EXPECT_EQ(count_gather_mismatches(in_place.to_host(), block), 0) << "in place";
}

TEST_F(NcclTest, BroadcastFromTheLastRank) {
  const int root = comm().size() - 1;  // not rank 0 whenever there are two ranks or more
  const std::int64_t count = 4099;
  std::vector<double> values(static_cast<std::size_t>(count), -1.0);
  if (comm().rank() == root) {
    for (std::int64_t i = 0; i < count; ++i) values[static_cast<std::size_t>(i)] = 0.5 * static_cast<double>(i);
  }
  DeviceBuffer<double> data(values);
  comm().broadcast(data.data(), count, DataType::f64, root);
  const std::vector<double> received = data.to_host();
  std::int64_t mismatches = 0;
  for (std::int64_t i = 0; i < count; ++i) mismatches += received[static_cast<std::size_t>(i)] != 0.5 * static_cast<double>(i);
  EXPECT_EQ(mismatches, 0) << "root " << root;
}

// Rank r's message to `to`: r·100000 + to·1000 + k (u8 would wrap; i64 shows a wrong peer).
std::vector<std::int64_t> message(int from, int to, std::int64_t count) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(count));
  for (std::int64_t k = 0; k < count; ++k) values[static_cast<std::size_t>(k)] = from * 100000 + to * 1000 + k;
  return values;
}

TEST_F(NcclTest, BlockingSendAndReceiveBetweenRanks) {
  if (comm().size() < 2) GTEST_SKIP() << "messages need two ranks (this run has one)";
  const std::int64_t count = 5000;
  // Rank 0 sends to the last rank, then receives its answer.
  const int last = comm().size() - 1;
  if (comm().rank() == 0) {
    DeviceBuffer<std::int64_t> out(message(0, last, count));
    comm().send(out.data(), count, DataType::i64, last, 7);
    DeviceBuffer<std::int64_t> in(count);
    comm().recv(in.data(), count, DataType::i64, last, 8);
    EXPECT_EQ(in.to_host(), message(last, 0, count));
  } else if (comm().rank() == last) {
    DeviceBuffer<std::int64_t> in(count);
    comm().recv(in.data(), count, DataType::i64, 0, 7);
    EXPECT_EQ(in.to_host(), message(0, last, count));
    DeviceBuffer<std::int64_t> out(message(last, 0, count));
    comm().send(out.data(), count, DataType::i64, 0, 8);
  }
}

// Every rank sends right and receives from the left at once: the exchange pattern that must
// not deadlock (the queued messages launch as one group).
TEST_F(NcclTest, NonBlockingRingExchange) {
  const int n = comm().size(), r = comm().rank();
  if (n < 2) GTEST_SKIP() << "messages need two ranks (this run has one)";
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const std::int64_t count = (1 << 18) + 5;
  DeviceBuffer<std::int64_t> out(message(r, right, count));
  DeviceBuffer<std::int64_t> in(count);
  std::vector<Request> requests;
  requests.push_back(comm().isend(out.data(), count, DataType::i64, right, 3));
  requests.push_back(comm().irecv(in.data(), count, DataType::i64, left, 3));
  wait_all(requests);
  for (const Request& request : requests) EXPECT_FALSE(request.active());
  EXPECT_EQ(in.to_host(), message(left, r, count));

  // irecv, then a blocking send on every rank (the tied-embedding gradient's pattern).
  DeviceBuffer<std::int64_t> back(count);
  Request receive = comm().irecv(back.data(), count, DataType::i64, right, 4);
  DeviceBuffer<std::int64_t> answer(message(r, left, count));
  comm().send(answer.data(), count, DataType::i64, left, 4);
  receive.wait();
  EXPECT_EQ(back.to_host(), message(right, r, count));
}

TEST_F(NcclTest, NonBlockingAllReduceTestThenWait) {
  const std::int64_t count = (1 << 22) + 1;  // 16 MiB of float: long enough to be seen in flight
  DeviceBuffer<float> data(contributions<float>(comm().rank(), count));
  const std::size_t first = comm().stats().records().size();
  Request request = comm().iall_reduce(data.data(), count, DataType::f32, ReduceOp::sum);
  EXPECT_TRUE(request.active());
  int polls = 0;
  while (polls < 3 && !request.test()) ++polls;  // test() may finish it; then wait() is a no-op
  request.wait();
  EXPECT_FALSE(request.active());
  EXPECT_EQ(count_reduce_mismatches(data.to_host(), ReduceOp::sum, comm().size()), 0);
  ASSERT_EQ(comm().stats().records().size(), first + 1);
  const CommRecord& record = comm().stats().records().back();
  EXPECT_FALSE(record.blocking);
  EXPECT_EQ(record.collective, Collective::all_reduce);
  EXPECT_EQ(record.bytes, count * 4);
}

TEST_F(NcclTest, SplitIntoSubCommunicators) {
  const int n = comm().size(), r = comm().rank();
  const int color = r % 2;  // even and odd ranks
  std::unique_ptr<Communicator> part = comm().split(color, r, "half");
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->name(), "half");
  const int members = (n - color + 1) / 2;
  EXPECT_EQ(part->size(), members);
  EXPECT_EQ(part->rank(), r / 2);
  // Each member contributes its world rank + 1: the sum over the part's world ranks.
  std::int64_t expected = 0;
  for (int w = color; w < n; w += 2) expected += w + 1;
  DeviceBuffer<std::int64_t> value(std::vector<std::int64_t>{r + 1});
  part->all_reduce(value.data(), 1, DataType::i64, ReduceOp::sum);
  EXPECT_EQ(value.to_host()[0], expected);
  EXPECT_EQ(part->stats().records().size(), 1u);
  EXPECT_EQ(part->stats().records().back().algorithm, "nccl");
}

TEST_F(NcclTest, HostBuffersGoThroughMpi) {
  std::vector<double> values = contributions<double>(comm().rank(), 77);
  const std::size_t first = comm().stats().records().size();
  comm().all_reduce(std::span<double>(values), ReduceOp::max);
  EXPECT_EQ(count_reduce_mismatches(values, ReduceOp::max, comm().size()), 0);
  EXPECT_EQ(comm().all_reduce_value(std::int64_t{2}), 2 * comm().size());
  ASSERT_EQ(comm().stats().records().size(), first + 2);
  EXPECT_EQ(comm().stats().records()[first].algorithm, "mpi");
  EXPECT_EQ(comm().stats().records()[first].bytes, 77 * 8);
}

// One record per call, with the nccl-tests size (bandwidth.hpp), the rank count, a positive
// time and the bandwidths computed from them.
TEST_F(NcclTest, StatsRecordEachCallWithItsBytes) {
  const int n = comm().size();
  const std::int64_t count = 4096;
  DeviceBuffer<float> a(count * n), b(count * n);
  comm().stats().clear();
  comm().all_reduce(a.data(), count, DataType::f32, ReduceOp::sum);
  comm().reduce_scatter(a.data(), b.data(), count, DataType::f32, ReduceOp::sum);
  comm().all_gather(b.data(), a.data(), count, DataType::f32);
  comm().broadcast(a.data(), count, DataType::f32, 0);
  const std::vector<CommRecord>& records = comm().stats().records();
  ASSERT_EQ(records.size(), 4u);
  const Collective expected[] = {Collective::all_reduce, Collective::reduce_scatter,
                                 Collective::all_gather, Collective::broadcast};
  for (std::size_t i = 0; i < records.size(); ++i) {
    const CommRecord& record = records[i];
    SCOPED_TRACE(std::string(to_string(expected[i])));
    EXPECT_EQ(record.collective, expected[i]);
    EXPECT_EQ(record.bytes, collective_bytes(expected[i], count, 4, n));
    EXPECT_EQ(record.ranks, n);
    EXPECT_TRUE(record.blocking);
    EXPECT_EQ(record.algorithm, "nccl");
    EXPECT_GT(record.seconds, 0.0);
    EXPECT_NEAR(record.algbw_gbps, static_cast<double>(record.bytes) / record.seconds / 1e9,
                1e-9 * record.algbw_gbps + 1e-12);
  }
  EXPECT_EQ(comm().stats().bytes_since(0), count * 4 * (1 + 2 * n) + count * 4);

  // Turned off, nothing is recorded (microbenchmarks keep their own).
  comm().stats().set_enabled(false);
  comm().all_reduce(a.data(), count, DataType::f32, ReduceOp::sum);
  comm().stats().set_enabled(true);
  EXPECT_EQ(records.size(), 4u);
}

// A message printed once by rank 0 instead of once per rank.
void say(int rank, const std::string& text) {
  if (rank == 0) std::printf("%s\n", text.c_str());
}

}  // namespace
}  // namespace sb::parallel

// MPI and the NCCL world around RUN_ALL_TESTS. Each rank takes the GPU of its node-local rank;
// when a node has fewer GPUs than ranks, or none, the communicator is not built and every
// test skips with the reason (the verdict stays collective: a failure anywhere fails all).
int main(int argc, char** argv) {
  using namespace sb::parallel;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int exit_code = 1;
  {
    std::unique_ptr<Communicator> world = make_mpi_world_communicator();
    const int rank = world->rank(), ranks = world->size();
    const int gpus = sb::kernels::cuda::visible_device_count();
    // The ranks sharing this node, each of which needs a GPU of its own.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_ranks = 1;
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    // Every rank must agree on building the communicator (it is collective).
    const int enough = world->all_reduce_value(gpus >= node_ranks ? 1 : 0, ReduceOp::min);
    if (gpus == 0) {
      g_skip_reason = "no CUDA device visible";
    } else if (!enough) {
      g_skip_reason = fmt::format("{} ranks on a node need a GPU each, but {} GPU{} visible",
                                  node_ranks, gpus, gpus == 1 ? " is" : "s are");
    }
    say(rank, fmt::format("NCCL {}, {} rank{}, {} GPU{} visible on rank 0{}", nccl_version(), ranks,
                          ranks == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s",
                          enough ? "" : ": every test skips (" + g_skip_reason + ")"));
    if (enough) {
      select_local_device();
      g_nccl = make_nccl_communicator(std::move(world));
    } else if (g_skip_reason.empty()) {
      g_skip_reason = "another rank's node has fewer GPUs than ranks";
    }
    if (rank != 0) {  // rank 0 lists the tests; the others print only their failures
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new sb::parallel::testing::RankFailurePrinter(rank));
    }
    exit_code = RUN_ALL_TESTS();
    Communicator& verdict = g_nccl ? *g_nccl : *world;
    exit_code = verdict.all_reduce_value(exit_code, ReduceOp::max);
    g_nccl.reset();
  }
  MPI_Finalize();
  return exit_code;
}
