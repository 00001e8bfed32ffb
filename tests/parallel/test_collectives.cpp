// SPDX-License-Identifier: Apache-2.0
// Every collective's values through the MPI communicator, blocking and non-blocking, float and
// double, on counts that are odd, tiny and a few MiB. Values are small integers so float sums
// are exact and any rank count gives one expected answer.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "mpi_test_environment.hpp"
#include "parallel/communicator.hpp"
#include "parallel/ring.hpp"

namespace sb::parallel {
namespace {

using testing::world;

// 1, odd counts not a multiple of any rank count on both sides of the 64 KiB switch from a tree
// to a ring all-reduce (libnbc_allreduce_choice.hpp), and ~4 MiB of float / 8 MiB of double.
const std::vector<std::int64_t> kCounts = {1, 7, 1001, 70001, (1 << 20) + 3};

template <class T>
class CollectiveTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CollectiveTest, ElementTypes);

// Rank r's element i before a reduction.
template <class T>
T contribution(int rank, std::int64_t i) {
  return static_cast<T>(rank + 1 + i % 7);
}

template <class T>
std::int64_t count_all_reduce_mismatches(const std::vector<T>& data, ReduceOp op, int ranks) {
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto base = static_cast<std::int64_t>(i) % 7;
    T expected = 0;
    if (op == ReduceOp::sum) expected = static_cast<T>(ranks * (ranks + 1) / 2 + ranks * base);
    if (op == ReduceOp::max) expected = static_cast<T>(ranks + base);
    if (op == ReduceOp::min) expected = static_cast<T>(1 + base);
    mismatches += data[i] != expected;
  }
  return mismatches;
}

TYPED_TEST(CollectiveTest, AllReduceEveryOpAndCount) {
  using T = TypeParam;
  Communicator& comm = world();
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    for (const std::int64_t count : kCounts) {
      std::vector<T> data(static_cast<std::size_t>(count));
      for (std::int64_t i = 0; i < count; ++i) data[i] = contribution<T>(comm.rank(), i);
      comm.all_reduce(std::span<T>(data), op);
      EXPECT_EQ(count_all_reduce_mismatches(data, op, comm.size()), 0)
          << "op " << static_cast<int>(op) << " count " << count;
    }
  }
}

TYPED_TEST(CollectiveTest, NonBlockingAllReducesInFlightTogether) {
  using T = TypeParam;
  Communicator& comm = world();
  std::vector<std::vector<T>> buffers;
  for (const std::int64_t count : kCounts) {
    auto& data = buffers.emplace_back(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) data[i] = contribution<T>(comm.rank(), i);
  }
  std::vector<Request> requests;
  for (auto& data : buffers) {
    requests.push_back(comm.iall_reduce(data.data(), static_cast<std::int64_t>(data.size()),
                                        data_type_of<T>(), ReduceOp::sum));
  }
  wait_all(requests);
  for (const Request& request : requests) EXPECT_FALSE(request.active());
  for (const auto& data : buffers) {
    EXPECT_EQ(count_all_reduce_mismatches(data, ReduceOp::sum, comm.size()), 0);
  }
}

// send block b element k on rank r: r + 2b + k%5; rank b receives the sum over r.
template <class T>
void check_reduce_scatter(bool blocking) {
  Communicator& comm = world();
  const int n = comm.size();
  for (const std::int64_t recv_count : kCounts) {
    std::vector<T> send(static_cast<std::size_t>(recv_count * n));
    for (int b = 0; b < n; ++b) {
      for (std::int64_t k = 0; k < recv_count; ++k) {
        send[b * recv_count + k] = static_cast<T>(comm.rank() + 2 * b + k % 5);
      }
    }
    std::vector<T> recv(static_cast<std::size_t>(recv_count), T(-1));
    if (blocking) {
      comm.reduce_scatter(send.data(), recv.data(), recv_count, data_type_of<T>(), ReduceOp::sum);
    } else {
      Request request = comm.ireduce_scatter(send.data(), recv.data(), recv_count,
                                             data_type_of<T>(), ReduceOp::sum);
      while (!request.test()) {
      }
    }
    std::int64_t mismatches = 0;
    for (std::int64_t k = 0; k < recv_count; ++k) {
      mismatches += recv[k] != static_cast<T>(n * (n - 1) / 2 + n * (2 * comm.rank() + k % 5));
    }
    EXPECT_EQ(mismatches, 0) << "recv_count " << recv_count << (blocking ? " blocking" : "");
  }
}

TYPED_TEST(CollectiveTest, ReduceScatterBlocking) { check_reduce_scatter<TypeParam>(true); }
TYPED_TEST(CollectiveTest, ReduceScatterNonBlocking) { check_reduce_scatter<TypeParam>(false); }

// rank r sends element k = 10r + k%3; every rank ends with every block. in_place: each rank's
// block is already in recv (send aliases it).
template <class T>
void check_all_gather(bool blocking, bool in_place) {
  Communicator& comm = world();
  const int n = comm.size();
  for (const std::int64_t send_count : kCounts) {
    std::vector<T> recv(static_cast<std::size_t>(send_count * n), T(-1));
    std::vector<T> separate(static_cast<std::size_t>(send_count));
    T* send = in_place ? recv.data() + comm.rank() * send_count : separate.data();
    for (std::int64_t k = 0; k < send_count; ++k) send[k] = static_cast<T>(10 * comm.rank() + k % 3);
    if (blocking) {
      comm.all_gather(send, recv.data(), send_count, data_type_of<T>());
    } else {
      comm.iall_gather(send, recv.data(), send_count, data_type_of<T>()).wait();
    }
    std::int64_t mismatches = 0;
    for (int r = 0; r < n; ++r) {
      for (std::int64_t k = 0; k < send_count; ++k) {
        mismatches += recv[r * send_count + k] != static_cast<T>(10 * r + k % 3);
      }
    }
    EXPECT_EQ(mismatches, 0) << "send_count " << send_count << (in_place ? " in place" : "");
  }
}

TYPED_TEST(CollectiveTest, AllGatherBlocking) { check_all_gather<TypeParam>(true, false); }
TYPED_TEST(CollectiveTest, AllGatherNonBlocking) { check_all_gather<TypeParam>(false, false); }
TYPED_TEST(CollectiveTest, AllGatherInPlace) { check_all_gather<TypeParam>(true, true); }

TYPED_TEST(CollectiveTest, BroadcastFromLastRank) {
  using T = TypeParam;
  Communicator& comm = world();
  const int root = comm.size() - 1;
  for (const std::int64_t count : kCounts) {
    std::vector<T> data(static_cast<std::size_t>(count), T(-1));
    if (comm.rank() == root) {
      for (std::int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(i % 11 + 0.5);
    }
    comm.broadcast(data.data(), count, data_type_of<T>(), root);
    std::int64_t mismatches = 0;
    for (std::int64_t i = 0; i < count; ++i) mismatches += data[i] != static_cast<T>(i % 11 + 0.5);
    EXPECT_EQ(mismatches, 0) << "count " << count;
  }
}

// Each rank sends to the next and receives from the previous (a ring), non-blocking.
TYPED_TEST(CollectiveTest, NonBlockingRingSendRecv) {
  using T = TypeParam;
  Communicator& comm = world();
  const int n = comm.size(), next = (comm.rank() + 1) % n, previous = (comm.rank() + n - 1) % n;
  for (const std::int64_t count : kCounts) {
    std::vector<T> out(static_cast<std::size_t>(count)), in(static_cast<std::size_t>(count), T(-1));
    for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(comm.rank() * 100 + i % 9);
    std::vector<Request> requests;
    requests.push_back(comm.irecv(in.data(), count, data_type_of<T>(), previous, 3));
    requests.push_back(comm.isend(out.data(), count, data_type_of<T>(), next, 3));
    wait_all(requests);
    std::int64_t mismatches = 0;
    for (std::int64_t i = 0; i < count; ++i) mismatches += in[i] != static_cast<T>(previous * 100 + i % 9);
    EXPECT_EQ(mismatches, 0) << "count " << count;
  }
}

// Pairs (0,1), (2,3), ...: the even rank sends first, the odd one answers (blocking forms).
TYPED_TEST(CollectiveTest, BlockingPingPongInPairs) {
  using T = TypeParam;
  Communicator& comm = world();
  const int partner = comm.rank() ^ 1;
  if (partner >= comm.size()) GTEST_SKIP() << "odd rank count: the last rank has no partner";
  for (const std::int64_t count : kCounts) {
    std::vector<T> message(static_cast<std::size_t>(count));
    if (comm.rank() % 2 == 0) {
      for (std::int64_t i = 0; i < count; ++i) message[i] = static_cast<T>(i % 13);
      comm.send(message.data(), count, data_type_of<T>(), partner, 5);
      comm.recv(message.data(), count, data_type_of<T>(), partner, 6);
      std::int64_t mismatches = 0;
      for (std::int64_t i = 0; i < count; ++i) mismatches += message[i] != static_cast<T>(i % 13 + 1);
      EXPECT_EQ(mismatches, 0) << "count " << count;
    } else {
      comm.recv(message.data(), count, data_type_of<T>(), partner, 5);
      for (auto& value : message) value += 1;
      comm.send(message.data(), count, data_type_of<T>(), partner, 6);
    }
  }
}

TEST(Collectives, IntegerValuesAndBarrier) {
  Communicator& comm = world();
  EXPECT_EQ(comm.all_reduce_value<std::int64_t>(comm.rank() + 1),
            static_cast<std::int64_t>(comm.size()) * (comm.size() + 1) / 2);
  EXPECT_EQ(comm.all_reduce_value<std::int32_t>(comm.rank(), ReduceOp::max), comm.size() - 1);
  const std::vector<std::int32_t> ranks = comm.all_gather_value<std::int32_t>(comm.rank());
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(ranks[r], r);
  std::uint8_t byte = comm.rank() == 0 ? 42 : 0;
  comm.broadcast(&byte, 1, DataType::u8, 0);
  EXPECT_EQ(byte, 42);
  comm.barrier();
}

TEST(Collectives, SplitByParity) {
  Communicator& comm = world();
  auto part = comm.split(comm.rank() % 2, comm.rank(), "parity");
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->name(), "parity");
  EXPECT_EQ(part->size(), (comm.size() + 1 - comm.rank() % 2) / 2);
  EXPECT_EQ(part->rank(), comm.rank() / 2);
  // A reduction stays inside the part: the sum of its members' world ranks.
  std::int64_t expected = 0;
  for (int r = comm.rank() % 2; r < comm.size(); r += 2) expected += r;
  EXPECT_EQ(part->all_reduce_value<std::int64_t>(comm.rank()), expected);
}

// bf16 and fp16 (16-bit main gradients): every op on small integers, which both types hold
// exactly, blocking and in flight; then a sum that must round, whatever the order of the
// ranks' additions: 1 on rank 0, 3·2^-12 on rank 1, zero elsewhere.
template <class F>
void check_sixteen_bit_all_reduce(F (*round)(float)) {
  Communicator& comm = world();
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    for (const std::int64_t count : kCounts) {
      std::vector<F> data(static_cast<std::size_t>(count));
      for (std::int64_t i = 0; i < count; ++i) data[i] = round(contribution<float>(comm.rank(), i));
      if (count % 2)
        comm.all_reduce(data.data(), count, data_type_of<F>(), op);
      else
        comm.iall_reduce(data.data(), count, data_type_of<F>(), op).wait();
      std::vector<float> widened(data.size());
      for (std::size_t i = 0; i < data.size(); ++i) widened[i] = to_float(data[i]);
      EXPECT_EQ(count_all_reduce_mismatches(widened, op, comm.size()), 0)
          << to_string(data_type_of<F>()) << " op " << static_cast<int>(op) << " count " << count;
    }
  }
  for (const std::int64_t count : kCounts) {  // our ring (strategy.allreduce ring), the sum only
    std::vector<F> data(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) data[i] = round(contribution<float>(comm.rank(), i));
    ring_iall_reduce(comm, data.data(), count, 77).wait();
    std::vector<float> widened(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) widened[i] = to_float(data[i]);
    EXPECT_EQ(count_all_reduce_mismatches(widened, ReduceOp::sum, comm.size()), 0)
        << "ring " << to_string(data_type_of<F>()) << " count " << count;
  }
  constexpr float kSmall = 3 * 0.000244140625f;  // 0.75 of fp16's ulp at 1, 0.09 of bf16's
  F value = round(comm.rank() == 0 ? 1.0f : comm.rank() == 1 ? kSmall : 0.0f);
  comm.all_reduce(&value, 1, data_type_of<F>(), ReduceOp::sum);
  EXPECT_EQ(to_float(value), to_float(round(1.0f + kSmall))) << to_string(data_type_of<F>());
}

TEST(Collectives, SixteenBitFloatsReduceInFp32AndRound) {
  check_sixteen_bit_all_reduce<bf16>(&to_bf16);
  check_sixteen_bit_all_reduce<fp16>(&to_fp16);
}

TEST(Requests, EmptyRequestIsComplete) {
  Request request;
  EXPECT_TRUE(request.test());
  request.wait();
  EXPECT_FALSE(request.active());
}

TEST(DataTypes, SizesAndNames) {
  EXPECT_EQ(size_of(DataType::f32), 4u);
  EXPECT_EQ(size_of(DataType::f64), 8u);
  EXPECT_EQ(size_of(DataType::i32), 4u);
  EXPECT_EQ(size_of(DataType::i64), 8u);
  EXPECT_EQ(size_of(DataType::u8), 1u);
  EXPECT_EQ(size_of(DataType::bf16), 2u);
  EXPECT_EQ(size_of(DataType::f16), 2u);
  EXPECT_EQ(to_string(DataType::bf16), "bf16");
  EXPECT_EQ(to_string(DataType::f32), "f32");
  EXPECT_EQ(to_string(DataType::u8), "u8");
}

}  // namespace
}  // namespace sb::parallel
