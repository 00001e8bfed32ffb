// SPDX-License-Identifier: Apache-2.0
// The GPT's ZeRO-3 hooks in one process: a unit's parameter ranges (the embedding, each block,
// the head) cover every parameter, the blocks' apart; and a model whose parameter buffer holds
// only what a gather put there (everything else NaN between its uses) trains bit for bit as
// the model holding all of it, asking for its units in forward and backward order, each next
// one prefetched. Leaves out the gathers over ranks (tests/parallel's model_parallel_training).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"

namespace sb::gpt {
namespace {

using kernels::Backend;
using i64 = std::int64_t;
using Unit = GptModel::Unit;

constexpr i64 kB = 2, kT = 16;
constexpr std::uint64_t kSeed = 23;

// Gathers by packing a unit's ranges from a full copy of the parameters into one of two
// buffers; a release poisons its buffer with NaN, so a read of weights the model no longer
// holds shows in its loss.
class PoisoningGather final : public UnitParameterGather {
 public:
  explicit PoisoningGather(std::vector<float> source) : source_(std::move(source)) {}
  const std::byte* gather(std::span<const FlatRange> unit) override {
    log.push_back("gather " + name(unit));
    std::vector<float>& packed = buffers_[next_++ % 2];
    packed.clear();
    for (const FlatRange& r : unit) packed.insert(packed.end(), source_.begin() + r.offset, source_.begin() + r.offset + r.count);
    held_.push_back({std::vector<FlatRange>(unit.begin(), unit.end()), &packed});
    return reinterpret_cast<const std::byte*>(packed.data());
  }
  void prefetch(std::span<const FlatRange> unit) override { log.push_back("prefetch " + name(unit)); }
  void release(std::span<const FlatRange> unit) override {
    const auto held = std::find_if(held_.begin(), held_.end(), [&](const auto& h) {
      return std::equal(unit.begin(), unit.end(), h.first.begin(), h.first.end());
    });
    ASSERT_NE(held, held_.end()) << "release of a unit not gathered";
    std::fill(held->second->begin(), held->second->end(), std::numeric_limits<float>::quiet_NaN());
    held_.erase(held);
  }
  bool holds_nothing() const { return held_.empty(); }
  std::vector<std::string> log;
  std::vector<std::pair<std::string, std::vector<FlatRange>>> names;

 private:
  std::string name(std::span<const FlatRange> unit) const {
    for (const auto& [label, ranges] : names)
      if (std::equal(unit.begin(), unit.end(), ranges.begin(), ranges.end())) return label;
    return "?";
  }
  std::vector<float> source_;
  std::array<std::vector<float>, 2> buffers_;
  std::size_t next_ = 0;
  std::vector<std::pair<std::vector<FlatRange>, std::vector<float>*>> held_;
};

std::vector<std::int32_t> tokens(i64 vocab, std::uint64_t stream) {
  const CounterRng rng(7, stream);
  std::vector<std::int32_t> t;
  for (i64 i = 0; i < kB * kT; ++i)
    t.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(vocab))));
  return t;
}

TEST(GptUnitGather, UnitsCoverEveryParameterAndBlocksAreApart) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  MemoryTracker tracker;
  const GptModel model(config, kB, kT, Backend::cpu, tracker);
  std::vector<int> covered(static_cast<std::size_t>(model.parameter_count()), 0);
  const auto mark = [&](const std::vector<FlatRange>& ranges) {
    EXPECT_TRUE(std::is_sorted(ranges.begin(), ranges.end(),
                               [](const FlatRange& a, const FlatRange& b) { return a.offset < b.offset; }));
    for (const FlatRange& r : ranges)
      for (i64 i = r.offset; i < r.offset + r.count; ++i) ++covered[static_cast<std::size_t>(i)];
  };
  mark(model.unit_parameter_ranges(Unit::embedding));
  for (i64 l = 0; l < config.layers; ++l) {
    const auto block = model.unit_parameter_ranges(Unit::block, l);
    EXPECT_EQ(block.size(), 12u);
    i64 numel = 0;
    for (const FlatRange& r : block) numel += r.count;
    EXPECT_EQ(numel, 12 * config.channels * config.channels + 13 * config.channels);
    mark(block);
  }
  mark(model.unit_parameter_ranges(Unit::head));
  const i64 wte = config.vocab * config.channels;  // tied: the embedding's and the head's
  for (i64 i = 0; i < model.parameter_count(); ++i)
    ASSERT_EQ(covered[static_cast<std::size_t>(i)], i < wte ? 2 : 1) << "parameter " << i;
  EXPECT_THROW(static_cast<void>(model.unit_parameter_ranges(Unit::block, config.layers)), Error);
}

TEST(GptUnitGather, AModelHoldingOnlyGatheredUnitsTrainsAsTheWholeOne) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  MemoryTracker tracker;
  GptModel whole(config, kB, kT, Backend::cpu, tracker);
  GptPartition gathered_partition;
  gathered_partition.parameter_residency = Residency::resident_pages;
  GptModel gathered(config, kB, kT, Backend::cpu, tracker, gathered_partition);
  whole.init_weights(kSeed);
  gathered.init_weights(kSeed);
  const std::span<float> flat = gathered.parameters_flat();
  PoisoningGather gather(std::vector<float>(flat.begin(), flat.end()));
  gather.names.push_back({"embedding", gathered.unit_parameter_ranges(Unit::embedding)});
  for (i64 l = 0; l < config.layers; ++l)
    gather.names.push_back({"block" + std::to_string(l), gathered.unit_parameter_ranges(Unit::block, l)});
  gather.names.push_back({"head", gathered.unit_parameter_ranges(Unit::head)});
  std::fill(flat.begin(), flat.end(), std::numeric_limits<float>::quiet_NaN());
  gathered.set_unit_parameter_gather(&gather);

  whole.zero_grad();
  gathered.zero_grad();
  for (std::uint64_t micro = 0; micro < 2; ++micro) {
    const auto x = tokens(config.vocab, 2 * micro), y = tokens(config.vocab, 2 * micro + 1);
    const float want = whole.forward(x.data(), y.data(), kB, kT);
    const float got = gathered.forward(x.data(), y.data(), kB, kT);
    ASSERT_EQ(got, want) << "micro-batch " << micro;
    whole.backward();
    gathered.backward();
  }
  const std::span<float> want = whole.gradients_flat(), got = gathered.gradients_flat();
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "gradient " << i;
  // nothing left gathered nor read from the model's own (poisoned) buffer, and the order of the
  // asks: forward, then backward last to first
  EXPECT_TRUE(gather.holds_nothing());
  EXPECT_TRUE(std::all_of(flat.begin(), flat.end(), [](float v) { return std::isnan(v); }));
  const std::vector<std::string> one_step{
      "gather embedding", "prefetch block0", "gather block0", "prefetch block1", "gather block1", "prefetch head",
      "gather head",      "gather head",     "prefetch block1", "gather block1",  "prefetch block0", "gather block0"};
  ASSERT_EQ(gather.log.size(), 2 * one_step.size());
  EXPECT_EQ(std::vector<std::string>(gather.log.begin(), gather.log.begin() + 12), one_step);
  EXPECT_EQ(tracker.usage().of(MemoryCategory::params), whole.parameter_count() * 4);  // the whole model's only
}

}  // namespace
}  // namespace sb::gpt
