// SPDX-License-Identifier: Apache-2.0
// The measurement harness (src/measure/) on a scripted clock: what each round's sample is, that
// warm-up calls are never timed, that calls take turns round by round in order, the sizing of a
// measurement from a probe, and the statistics over the rounds.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "measure/statistics.hpp"
#include "measure/timing.hpp"

namespace {

using sb::measure::Plan;

// A clock whose rounds last what the script says, and which logs when it starts and stops, so a
// test sees which calls fell inside a round.
class ScriptedClock final : public sb::measure::RoundClock {
 public:
  ScriptedClock(std::vector<double> seconds, std::vector<std::string>& log) : seconds_(std::move(seconds)), log_(log) {}
  void start() override { log_.push_back("start"); }
  double stop() override {
    log_.push_back("stop");
    return seconds_.at(next_++);
  }
  void settle() override { log_.push_back("settle"); }

 private:
  std::vector<double> seconds_;
  std::size_t next_ = 0;
  std::vector<std::string>& log_;
};

TEST(MeasureStatistics, OddCountMedianIsTheMiddleValue) {
  const std::vector<double> samples = {5, 1, 3};
  const sb::measure::Statistics s = sb::measure::statistics_of(samples);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.spread(), (5.0 - 1.0) / 3.0);
}

TEST(MeasureStatistics, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  const std::vector<double> samples = {4, 1, 2, 10};
  const sb::measure::Statistics s = sb::measure::statistics_of(samples);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 4.25);
  EXPECT_DOUBLE_EQ(s.spread(), 3.0);
}

TEST(MeasureStatistics, OneSampleHasNoSpreadAndNoSamplesAreNaN) {
  const std::vector<double> one = {2.5};
  EXPECT_DOUBLE_EQ(sb::measure::statistics_of(one).spread(), 0.0);
  const sb::measure::Statistics none = sb::measure::statistics_of(std::vector<double>{});
  EXPECT_EQ(none.count, 0u);
  EXPECT_TRUE(std::isnan(none.median));
  EXPECT_TRUE(std::isnan(none.min));
  EXPECT_TRUE(std::isnan(none.spread()));
}

TEST(MeasureTiming, WarmupCallsAreNotTimed) {
  std::vector<std::string> log;
  ScriptedClock clock({0.3, 0.6}, log);
  int calls = 0;
  const std::function<void()> call = [&] { log.push_back("call " + std::to_string(++calls)); };
  const std::vector<double> samples = sb::measure::time_rounds(call, {.warmups = 2, .rounds = 2, .iterations = 3},
                                                               clock);
  EXPECT_EQ(calls, 2 + 2 * 3);
  const std::vector<std::string> expected = {"call 1", "call 2", "settle",                   // warm-ups
                                             "start",  "call 3", "call 4", "call 5", "stop",  // round 1
                                             "start",  "call 6", "call 7", "call 8", "stop"};
  EXPECT_EQ(log, expected);
  // a round's sample is its seconds per call
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[0], 0.1);
  EXPECT_DOUBLE_EQ(samples[1], 0.2);
}

TEST(MeasureTiming, CallsTakeTurnsRoundByRoundAndSamplesKeepRoundOrder) {
  std::vector<std::string> log;
  // rounds: (a, b) (a, b) (a, b), each under its own start/stop
  ScriptedClock clock({1, 10, 2, 20, 3, 30}, log);
  const std::vector<std::function<void()>> calls = {[&] { log.push_back("a"); }, [&] { log.push_back("b"); }};
  const auto samples = sb::measure::time_in_turns(calls, {.warmups = 1, .rounds = 3, .iterations = 1}, clock);
  const std::vector<std::string> expected = {"a",     "b",   "settle",                                // warm-ups
                                             "start", "a", "stop", "start", "b", "stop",              // round 1
                                             "start", "a", "stop", "start", "b", "stop",              // round 2
                                             "start", "a", "stop", "start", "b", "stop"};             // round 3
  EXPECT_EQ(log, expected);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0], (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(samples[1], (std::vector<double>{10, 20, 30}));
  EXPECT_DOUBLE_EQ(sb::measure::statistics_of(samples[1]).min, 10);
}

TEST(MeasureTiming, APassRunsEveryCallOnceUnderOneClock) {
  std::vector<std::string> log;
  ScriptedClock clock({0.5}, log);
  const std::vector<std::function<void()>> calls = {[&] { log.push_back("a"); }, [&] { log.push_back("b"); }};
  EXPECT_DOUBLE_EQ(sb::measure::time_pass(calls, clock), 0.5);
  EXPECT_EQ(log, (std::vector<std::string>{"start", "a", "b", "stop"}));
}

TEST(MeasureTiming, WarmUpRunsEachCallThenSettlesOnce) {
  std::vector<std::string> log;
  ScriptedClock clock({}, log);
  const std::vector<std::function<void()>> calls = {[&] { log.push_back("a"); }, [&] { log.push_back("b"); }};
  sb::measure::warm_up(calls, 2, clock);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "a", "b", "b", "settle"}));
  log.clear();
  sb::measure::warm_up(calls, 0, clock);
  EXPECT_TRUE(log.empty());
}

TEST(MeasureTiming, ABadPlanIsRefused) {
  std::vector<std::string> log;
  ScriptedClock clock({}, log);
  const std::function<void()> call = [] {};
  EXPECT_ANY_THROW(sb::measure::time_rounds(call, {.warmups = 0, .rounds = 0, .iterations = 1}, clock));
  EXPECT_ANY_THROW(sb::measure::time_rounds(call, {.warmups = -1, .rounds = 1, .iterations = 1}, clock));
  EXPECT_ANY_THROW(sb::measure::time_rounds(call, {.warmups = 0, .rounds = 1, .iterations = 0}, clock));
}

TEST(MeasureTiming, CountToFillRoundsUpAndClamps) {
  EXPECT_EQ(sb::measure::count_to_fill(0.02, 0.003, 1, 200), 7);     // 6.67 calls fill 20 ms
  EXPECT_EQ(sb::measure::count_to_fill(0.02, 0.0, 1, 200), 200);     // a 0 s probe: the most
  EXPECT_EQ(sb::measure::count_to_fill(0.02, 1.0, 3, 200), 3);       // a slow call: the fewest
}

TEST(MeasureTiming, CollectedRoundsLeaveOutWarmupsAndRunBeforeEachEveryTime) {
  int steps = 0, barriers = 0;
  struct Figures {
    int step;
    double wall_s;
  };
  const std::function<Figures()> step = [&] {
    ++steps;
    return Figures{steps, 0.1 * steps};
  };
  const std::vector<Figures> rounds =
      sb::measure::collect_rounds<Figures>({.warmups = 1, .rounds = 3}, step, [&] { ++barriers; });
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(barriers, 4);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[0].step, 2);
  EXPECT_EQ(rounds[2].step, 4);
  const sb::measure::Statistics wall = sb::measure::statistics_of(std::span<const Figures>(rounds), &Figures::wall_s);
  EXPECT_DOUBLE_EQ(wall.median, 0.3);
  EXPECT_DOUBLE_EQ(wall.min, 0.2);
}

TEST(MeasureTiming, HostClockSettlesAfterTheWarmupsAndBeforeItStops) {
  int settled = 0;
  sb::measure::HostClock clock([&] { ++settled; });
  const std::function<void()> call = [] {};
  const std::vector<double> samples = sb::measure::time_rounds(call, {.warmups = 1, .rounds = 4, .iterations = 2},
                                                               clock);
  EXPECT_EQ(settled, 1 + 4);
  for (double s : samples) EXPECT_GE(s, 0.0);
}

}  // namespace
