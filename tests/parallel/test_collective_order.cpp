// SPDX-License-Identifier: Apache-2.0
// Every rank must issue the collectives of a communicator in the same order (MPI's rule, and
// libnbc's: it gives each non-blocking collective the communicator's next tag, so two ranks that
// disagree on the order match one call's messages with another's: MPI_ERR_TRUNCATE, or a hang).
// A gradient exchange's buckets complete at different times on different ranks, so nothing it
// starts may depend on which ones completed. Checked on one process: a communicator that
// records every call, whose non-blocking calls complete at once on one run and only when waited
// for on the other, with a blocking all-reduce (synchronised BatchNorm's) between backward's
// ranges; the two runs must issue the same calls in the same order.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "one_thread_runtime.hpp"
#include "parallel/communicator.hpp"
#include "train/data_parallel.hpp"

namespace sb::train {
namespace {

using parallel::DataType;
using parallel::ReduceOp;
using parallel::Request;

// Rank 0 of `size`: records each call as "<collective> <count>"; the data are left as they are.
class RecordingCommunicator final : public parallel::Communicator {
 public:
  RecordingCommunicator(int size, bool completes_at_once) : size_(size), at_once_(completes_at_once) {}
  const std::vector<std::string>& calls() const { return calls_; }

  int rank() const override { return 0; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void all_reduce(void*, std::int64_t count, DataType, ReduceOp) override { log("all_reduce", count); }
  Request iall_reduce(void*, std::int64_t count, DataType, ReduceOp) override {
    return started("iall_reduce", count);
  }
  void reduce_scatter(const void*, void*, std::int64_t count, DataType, ReduceOp) override {
    log("reduce_scatter", count);
  }
  Request ireduce_scatter(const void*, void*, std::int64_t count, DataType, ReduceOp) override {
    return started("ireduce_scatter", count);
  }
  void all_gather(const void*, void*, std::int64_t count, DataType) override { log("all_gather", count); }
  Request iall_gather(const void*, void*, std::int64_t count, DataType) override {
    return started("iall_gather", count);
  }
  Request iall_gatherv_in_place(void*, std::span<const std::int64_t> counts, DataType) override {
    return started("iall_gatherv", static_cast<std::int64_t>(counts.size()));
  }
  void broadcast(void*, std::int64_t count, DataType, int) override { log("broadcast", count); }
  void send(const void*, std::int64_t count, DataType, int, int) override { log("send", count); }
  void recv(void*, std::int64_t count, DataType, int, int) override { log("recv", count); }
  Request isend(const void*, std::int64_t count, DataType, int, int) override { return started("isend", count); }
  Request irecv(void*, std::int64_t count, DataType, int, int) override { return started("irecv", count); }
  void barrier() override { log("barrier", 0); }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override { return nullptr; }

 private:
  class Pending final : public Request::Impl {
   public:
    explicit Pending(bool at_once) : at_once_(at_once) {}
    bool test() override { return at_once_; }
    void wait() override {}

   private:
    bool at_once_;
  };
  void log(const char* collective, std::int64_t count) { calls_.push_back(std::string(collective) + " " + std::to_string(count)); }
  Request started(const char* collective, std::int64_t count) {
    log(collective, count);
    return Request(std::make_unique<Pending>(at_once_));
  }

  int size_;
  bool at_once_;
  std::string name_ = "dp";
  std::vector<std::string> calls_;
};

// Backward's ranges, last parameter first, of uneven sizes around the bucket's: some smaller,
// some several buckets long (their bucket's staging is larger, and is reused later).
std::vector<std::pair<std::int64_t, std::int64_t>> backward_ranges(std::int64_t parameters) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  std::uint32_t state = 12345;
  for (std::int64_t end = parameters; end > 0;) {
    state = state * 1664525u + 1013904223u;
    const std::int64_t length = 1 + static_cast<std::int64_t>((state >> 8) % 350);
    const std::int64_t begin = std::max<std::int64_t>(0, end - length);
    ranges.emplace_back(begin, end - begin);
    end = begin;
  }
  return ranges;
}

// Three steps of two micro-batches of ZeRO-`stage` on rank 0 of 2, a blocking all-reduce after
// each range; the calls the exchange and those all-reduces issued.
std::vector<std::string> zero_exchange_calls(int stage, bool completes_at_once) {
  constexpr std::int64_t kParameters = 4000, kBucketBytes = 100 * sizeof(float);
  MemoryTracker tracker;
  RecordingCommunicator dp(2, completes_at_once);
  std::vector<float> parameters(kParameters, 1.0f);
  TrackedBuffer gradient_pages(tracker, MemoryCategory::comm, kParameters * sizeof(float), "gradients",
                               Device::cpu, Residency::resident_pages);
  const std::span<float> gradients(gradient_pages.as<float>(), kParameters);
  ZeroSharding zero(stage, dp, parameters, gradients, &gradient_pages, kBucketBytes, tracker);
  for (int step = 0; step < 3; ++step) {
    for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
      for (const auto& [offset, count] : backward_ranges(kParameters)) {
        zero.ready(offset, count);
        dp.all_reduce(nullptr, 2, DataType::f32, ReduceOp::sum);  // a BatchNorm's statistics
      }
      zero.micro_batch_done();
    }
    zero.finish(1.0);
  }
  return dp.calls();
}

TEST(CollectiveOrder, ZeroTwoAndThreeStartTheSameCallsWhicheverBucketsCompleteFirst) {
  for (int stage : {2, 3}) {
    const std::vector<std::string> at_once = zero_exchange_calls(stage, true);
    const std::vector<std::string> when_waited = zero_exchange_calls(stage, false);
    ASSERT_GT(at_once.size(), 100u);
    std::size_t first_difference = 0;
    while (first_difference < std::min(at_once.size(), when_waited.size()) &&
           at_once[first_difference] == when_waited[first_difference])
      ++first_difference;
    EXPECT_EQ(at_once, when_waited) << "zero-" << stage << ": call " << first_difference << " is '"
                                    << (first_difference < at_once.size() ? at_once[first_difference] : "none")
                                    << "' where buckets complete at once, '"
                                    << (first_difference < when_waited.size() ? when_waited[first_difference] : "none")
                                    << "' where they complete when waited for";
  }
}

// The bucketed all-reduce of plain data parallelism (MPI's own algorithm: one call per bucket).
std::vector<std::string> bucketed_all_reduce_calls(bool completes_at_once) {
  constexpr std::int64_t kParameters = 4000, kBucketBytes = 100 * sizeof(float);
  MemoryTracker tracker;
  RecordingCommunicator dp(2, completes_at_once);
  std::vector<float> gradients(kParameters, 1.0f);
  BucketedAllReduce exchange(dp, gradients, kBucketBytes, true, "mpi", tracker);
  for (int step = 0; step < 3; ++step) {
    for (const auto& [offset, count] : backward_ranges(kParameters)) {
      exchange.ready(offset, count);
      dp.all_reduce(nullptr, 2, DataType::f32, ReduceOp::sum);
    }
    exchange.finish(1.0);
  }
  return dp.calls();
}

TEST(CollectiveOrder, BucketedAllReduceStartsTheSameCallsWhicheverBucketsCompleteFirst) {
  const std::vector<std::string> at_once = bucketed_all_reduce_calls(true);
  ASSERT_GT(at_once.size(), 100u);
  EXPECT_EQ(at_once, bucketed_all_reduce_calls(false));
}

}  // namespace
}  // namespace sb::train
