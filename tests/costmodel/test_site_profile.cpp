// SPDX-License-Identifier: Apache-2.0
// Every shipped site profile loads, and mistakes in one are one clear sentence. Leaves out the
// figures' sources (comments in jobs/sites/*.yaml).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/check.hpp"
#include "costmodel/site_profile.hpp"
#include "costmodel_test_support.hpp"
#include "plan/config.hpp"

namespace sb::costmodel {
namespace {

TEST(SiteProfile, EveryShippedProfileLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SB_SOURCE_DIR) + "/jobs/sites")) {
    if (entry.path().extension() != ".yaml") continue;
    const SiteProfile p = load_site_profile(entry.path());
    EXPECT_GE(p.devices_per_node, 1) << entry.path();
    EXPECT_GT(p.peak("bf16"), p.peak("fp32") * 0.99) << entry.path();
    ++count;
  }
  EXPECT_EQ(count, 6);  // A100, H100, H200, GH200, MI250X, this machine
}

TEST(SiteProfile, DatasheetFiguresOfTheA100) {
  const SiteProfile a100 = testing::site("a100-80gb-dgx");
  EXPECT_EQ(a100.devices_per_node, 8);
  EXPECT_DOUBLE_EQ(a100.peak("fp16"), 312e12);
  EXPECT_DOUBLE_EQ(a100.peak("tf32"), 156e12);
  EXPECT_DOUBLE_EQ(a100.efficiency("fp16"), 1.0);  // no flat calibrated efficiency
  // the shape-aware GEMM model: 108 SMs, 128×128 tiles, e_max fitted on the Megatron set
  ASSERT_TRUE(a100.gemm.has_value());
  EXPECT_EQ(a100.gemm->sm_count, 108);
  EXPECT_EQ(a100.gemm->tile_m, 128);
  EXPECT_GT(a100.gemm->e_max, 0.0);
  EXPECT_LE(a100.gemm->e_max, 1.0);
  EXPECT_TRUE(a100.calibrated());
  EXPECT_DOUBLE_EQ(a100.link(true).bandwidth, 25e9);
  const SiteProfile mi = testing::site("mi250x-cray-ex235a");
  EXPECT_THROW(mi.peak("tf32"), UserError);  // MI250X has no TF32
}

std::string error_of(const std::string& yaml) {
  try {
    parse_site_profile(plan::parse_yaml_text(yaml, "site.yaml"), "site.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const char* kMinimal = R"(name: s
device: d
devices_per_node: 4
peak_flops: {fp32: 1.0e12, bf16: 2.0e12, fp16: 2.0e12}
memory_bytes: 1.0e9
memory_bandwidth: 1.0e11
links:
  intra_node: {bandwidth: 1.0e10, latency: 1.0e-6}
  inter_node: {bandwidth: 1.0e9, latency: 5.0e-6}
power_watts: 100
)";

TEST(SiteProfile, MinimalProfileAndCalibratedFields) {
  EXPECT_EQ(error_of(kMinimal), "");
  const SiteProfile p = parse_site_profile(
      plan::parse_yaml_text(std::string(kMinimal) +
                                 "calibrated:\n  gemm_efficiency: {bf16: 0.5}\n  memory_efficiency: 0.8\n"
                                 "  links:\n    inter_node: {alpha: 2.0e-5, beta: 5.0e8}\n",
                             "site.yaml"),
      "site.yaml");
  EXPECT_DOUBLE_EQ(p.efficiency("bf16"), 0.5);
  EXPECT_DOUBLE_EQ(p.efficiency("fp32"), 1.0);
  EXPECT_TRUE(p.calibrated());
  EXPECT_DOUBLE_EQ(p.link(true).bandwidth, 5e8);
  EXPECT_DOUBLE_EQ(p.link(true).latency, 2e-5);
  EXPECT_DOUBLE_EQ(p.link(false).bandwidth, 1e10);
  EXPECT_FALSE(p.price_per_device_hour.has_value());
}

TEST(SiteProfile, MistakesNameTheFileAndKey) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "gpus: 8\n").rfind("site.yaml: unknown key 'gpus'", 0), 0u);
  std::string missing(kMinimal);
  missing.erase(missing.find("memory_bytes"), std::string("memory_bytes: 1.0e9\n").size());
  EXPECT_EQ(error_of(missing), "site.yaml: 'memory_bytes' is missing");
  std::string no_fp16(kMinimal);
  no_fp16.replace(no_fp16.find(", fp16: 2.0e12"), std::string(", fp16: 2.0e12").size(), "");
  EXPECT_NE(error_of(no_fp16).find("'peak_flops.fp16' is missing"), std::string::npos);
  std::string typo(kMinimal);
  typo.replace(typo.find("latency: 1.0e-6"), std::string("latency: 1.0e-6").size(), "latncy: 1.0e-6");
  EXPECT_NE(error_of(typo).find("unknown key 'links.intra_node.latncy'"), std::string::npos);
  std::string negative(kMinimal);
  negative.replace(negative.find("power_watts: 100"), std::string("power_watts: 100").size(), "power_watts: -1");
  EXPECT_EQ(error_of(negative), "site.yaml: 'power_watts' must be positive, got -1");
  EXPECT_NE(error_of(std::string(kMinimal) + "calibrated: {gemm_efficiency: {fp16: 1.5}}\n")
                .find("'calibrated.gemm_efficiency.fp16' must lie in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of("devices_per_node: [1]\n").find("site.yaml"), std::string::npos);
}

// gemm.k_overhead: a tile's fill and epilogue in steps of K, 0 when absent, never negative.
TEST(SiteProfile, GemmKOverheadIsAWholeTilesStepsOfK) {
  const std::string gemm = std::string(kMinimal) + "gemm: {sm_count: 108, e_max: 0.8";
  EXPECT_DOUBLE_EQ(parse_site_profile(plan::parse_yaml_text(gemm + "}\n", "site.yaml"), "site.yaml").gemm->k_overhead,
                   0.0);
  EXPECT_DOUBLE_EQ(
      parse_site_profile(plan::parse_yaml_text(gemm + ", k_overhead: 432}\n", "site.yaml"), "site.yaml").gemm->k_overhead,
      432.0);
  EXPECT_EQ(error_of(gemm + ", k_overhead: -1}\n"), "site.yaml: 'gemm.k_overhead' must not be negative, got -1");
  EXPECT_NE(error_of(gemm + ", k_overhead: 1.0e6}\n").find("'gemm.k_overhead' is a tile's fill and epilogue"),
            std::string::npos);
}

// gemm.e_attention: the fused attention kernel's efficiency in (0, 1]; absent, none (it runs at e_max).
TEST(SiteProfile, GemmEAttentionIsAnEfficiency) {
  const std::string gemm = std::string(kMinimal) + "gemm: {sm_count: 108, e_max: 0.8";
  const auto parsed = [&](const std::string& rest) {
    return parse_site_profile(plan::parse_yaml_text(gemm + rest, "site.yaml"), "site.yaml").gemm->e_attention;
  };
  EXPECT_FALSE(parsed("}\n").has_value());
  EXPECT_DOUBLE_EQ(parsed(", e_attention: 0.32}\n").value_or(-1.0), 0.32);
  EXPECT_EQ(error_of(gemm + ", e_attention: 1.5}\n"), "site.yaml: 'gemm.e_attention' must lie in (0, 1], got 1.5");
  EXPECT_NE(error_of(gemm + ", e_attention: 0}\n").find("e_attention"), std::string::npos);
  EXPECT_NE(error_of(gemm + ", e_attentoin: 0.3}\n").find("e_attentoin"), std::string::npos);
}

}  // namespace
}  // namespace sb::costmodel
