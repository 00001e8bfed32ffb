// SPDX-License-Identifier: Apache-2.0
// `scalebench calibrate --out SITE.yaml` end to end on this machine (fp32, one thread, a short
// timing budget): the profile it writes loads, keeps the base's datasheet figures, carries
// kernel times and the link's α/β, and a run trained against it is predicted from its kernel
// times. Checked through the files, never stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "calibrate/kernel_benchmark.hpp"
#include "cli_harness.hpp"
#include "core/cpu_identity.hpp"
#include "costmodel/kernel_calls.hpp"
#include "costmodel/kernel_profile.hpp"
#include "costmodel/site_profile.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

TEST(CalibrateCommand, FitsASiteProfileThatTrainPredictsFrom) {
  Scratch scratch;
  const auto site = scratch.path("here.yaml");
  const CommandResult r = scratch.run("calibrate --site this-machine --out " + site.string() +
                                      " --precision fp32 --threads 1 --seconds-per-call 0.0005 --max-batch 2");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  const costmodel::SiteProfile fitted = costmodel::load_site_profile(site);
  const costmodel::SiteProfile base =
      costmodel::load_site_profile(std::string(SB_SOURCE_DIR) + "/jobs/sites/this-machine.yaml");
  EXPECT_EQ(fitted.name, base.name);
  EXPECT_EQ(fitted.peak("fp32"), base.peak("fp32"));
  EXPECT_EQ(fitted.scheduler.partition, base.scheduler.partition);
  EXPECT_EQ(fitted.calibrated_cpu, cpu_identity());  // whose kernel times these are
  ASSERT_NE(fitted.kernel_times, nullptr);
  EXPECT_TRUE(fitted.kernel_times->covers("fp32", 1));
  EXPECT_FALSE(fitted.kernel_times->covers("fp32", 2));
  EXPECT_FALSE(fitted.kernel_times->covers("bf16", 1));
  // giving 64 MiB of pages back and faulting them in again, timed alone and with every core's
  // rank doing it at once: between 0.05 µs and 1 ms a 4 KiB page
  constexpr std::int64_t kRefaultBytes = 64 << 20;
  const costmodel::KernelCall refault{"page_refault", {kRefaultBytes}, static_cast<double>(kRefaultBytes), 0, 0};
  for (int ranks = 1; ranks <= std::min(base.devices_per_node, 2); ++ranks) {
    const std::optional<double> seconds = fitted.kernel_times->seconds(refault, "fp32", 1, ranks);
    ASSERT_TRUE(seconds.has_value()) << ranks << " rank(s) at once";
    const double per_page = *seconds / (kRefaultBytes / 4096.0);
    EXPECT_GT(per_page, 5e-8) << ranks;
    EXPECT_LT(per_page, 1e-3) << ranks;
  }
  ASSERT_TRUE(fitted.calibrated_intra_node.has_value());
  EXPECT_GT(fitted.calibrated_intra_node->latency, 0.0);
  EXPECT_GT(fitted.calibrated_intra_node->bandwidth, 1e8);  // shared memory between two cores
  EXPECT_GE(fitted.calibrated_intra_node->reduction, 0.0);  // γ: what the ring all-reduce adds to its moves
  ASSERT_EQ(fitted.gemm_efficiency.count("fp32"), 1u);
  EXPECT_GT(fitted.gemm_efficiency.at("fp32"), 0.0);
  EXPECT_LE(fitted.gemm_efficiency.at("fp32"), 1.0);
  // the datasheet comments stay; a second calibration replaces the section instead of adding one
  const std::string text = read_text(site);
  EXPECT_NE(text.find("# Peak per core = clock"), std::string::npos);
  EXPECT_NE(text.find("      gamma: "), std::string::npos) << text;
  const CommandResult refit = scratch.run("calibrate --site " + site.string() + " --out " + site.string() +
                                          " --precision fp32 --threads 1 --seconds-per-call 0.0001 --max-batch 1"
                                          " --rounds 1");
  ASSERT_EQ(refit.exit_code, 0) << refit.stderr_text << refit.stdout_text;
  EXPECT_NE(refit.stdout_text.find("round 1 of 1,"), std::string::npos) << refit.stdout_text;  // --rounds taken
  EXPECT_EQ(r.stdout_text.find("round 1 of 1,"), std::string::npos);                           // the default: 3
  const std::string again = read_text(site);
  EXPECT_EQ(again.find("calibrated:"), again.rfind("calibrated:"));
  EXPECT_EQ(again.find("# Fitted by"), again.rfind("# Fitted by")) << again;

  // a short one-thread fp32 run predicted from the kernel times, its error stored
  const auto config = scratch.write("nano.yaml", "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 8}\n"
                                                 "steps: 6\neval_every: 100\neval_batches: 1\nthreads: 1\nsite: " +
                                                     site.string() + "\n");
  const auto out = scratch.path("nano.h5");
  const CommandResult t = scratch.run("train --config " + config.string() + " --out " + out.string());
  ASSERT_EQ(t.exit_code, 0) << t.stderr_text;
  const std::string p = "/runs/gpt-nano/prediction";
  EXPECT_EQ(io::read_number_attribute(out, p, "kernel_timed"), 1);
  EXPECT_EQ(io::read_number_attribute(out, p, "calibrated"), 1);
  EXPECT_TRUE(std::isfinite(io::read_number_attribute(out, p, "error_step_time_pct")));
  EXPECT_EQ(io::read_number_attribute(out, p, "error_activations_pct"), 0.0);
  EXPECT_EQ(io::read_string_attribute(out, p, "calibrated_cpu"), cpu_identity());
  EXPECT_EQ(t.stderr_text.find("was calibrated on"), std::string::npos) << t.stderr_text;

  // the same profile claiming another CPU: the run warns, naming both, and still trains
  std::string elsewhere = read_text(site);
  const std::string line = "  cpu: \"" + cpu_identity() + "\"";
  ASSERT_NE(elsewhere.find(line), std::string::npos) << elsewhere;
  elsewhere.replace(elsewhere.find(line), line.size(), "  cpu: \"Some Other CPU (GenuineIntel, family 6, model 1)\"");
  std::ofstream(site) << elsewhere;
  const auto out2 = scratch.path("nano2.h5");
  const CommandResult w = scratch.run("train --config " + config.string() + " --out " + out2.string());
  ASSERT_EQ(w.exit_code, 0) << w.stderr_text;
  EXPECT_NE(w.stderr_text.find("was calibrated on Some Other CPU (GenuineIntel, family 6, model 1), and this run is on " +
                               cpu_identity()),
            std::string::npos)
      << w.stderr_text;
  EXPECT_EQ(io::read_string_attribute(out2, p, "calibrated_cpu"), "Some Other CPU (GenuineIntel, family 6, model 1)");
}

// A micro-batch's per-call figures add up to its median whole pass, split as the calls'
// medians split it: with skewed noise (each call slow now and then, on different passes) the
// medians alone add up to less than any pass took.
TEST(CalibrateKernelTimes, PerCallFiguresAddUpToTheMedianWholePass) {
  // seconds[call][pass]: three calls of 1, 2 and 3 ms, each 50% slower on one pass of five
  const std::vector<std::vector<double>> seconds = {{1.0, 1.5, 1.0, 1.0, 1.0},
                                                    {2.0, 2.0, 3.0, 2.0, 2.0},
                                                    {3.0, 3.0, 3.0, 4.5, 3.0}};
  const std::vector<double> figures = calibrate::per_call_seconds_of_passes(seconds);
  ASSERT_EQ(figures.size(), 3u);
  // passes: 6, 6.5, 7, 7.5, 6: median 6.5; medians 1, 2, 3 add up to 6
  EXPECT_NEAR(figures[0] + figures[1] + figures[2], 6.5, 1e-12);
  EXPECT_NEAR(figures[1] / figures[0], 2.0, 1e-12);
  EXPECT_NEAR(figures[2] / figures[0], 3.0, 1e-12);
  // a single pass is its own median: figures are the pass itself
  EXPECT_EQ(calibrate::per_call_seconds_of_passes({{1.0}, {2.0}}), (std::vector<double>{1.0, 2.0}));
  EXPECT_THROW(calibrate::per_call_seconds_of_passes({{1.0, 2.0}, {1.0}}), std::exception);
}

TEST(CalibrateCommand, GpuSiteIsRefusedInOneSentence) {
  Scratch scratch;
  const CommandResult r = scratch.run("calibrate --site h100-sxm-dgx --out " + scratch.path("h.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("calibrate fits CPU sites"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(scratch.path("h.yaml")));
}

}  // namespace
}  // namespace sb::testing
