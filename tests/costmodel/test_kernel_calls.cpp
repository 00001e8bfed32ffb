// The kernel calls the cost model attributes to the trainer's models, the kernel-time table,
// and a prediction from kernel times.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/check.hpp"
#include "costmodel/kernel_calls.hpp"
#include "costmodel/kernel_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel_test_support.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb::costmodel {
namespace {

using testing::gpt_case;
using testing::site;

bool computes(const KernelCall& c) {
  return c.kernel.starts_with("matmul") || c.kernel.starts_with("attention") || c.kernel.starts_with("conv2d");
}
double compute_size(const std::vector<KernelCall>& calls) {
  double sum = 0;
  for (const KernelCall& c : calls)
    if (computes(c)) sum += c.size;
  return sum;
}

TEST(KernelCalls, GptMatmulsAndAttentionAreTheTrainersFlops) {
  for (const char* name : {"gpt-nano", "gpt-tiny"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    for (std::int64_t tp : {1, 2, 4}) {
      double forward = 0, backward = 0;
      for (GptUnitKind unit : {GptUnitKind::embedding, GptUnitKind::block, GptUnitKind::head}) {
        const KernelCalls k = gpt_unit_kernel_calls(g, unit, tp, 4, g.max_seq_len, 4);
        const double times = unit == GptUnitKind::block ? static_cast<double>(g.layers) : 1.0;
        forward += times * compute_size(k.forward);
        backward += times * compute_size(k.backward);
      }
      // a tp rank does 1/tp of every GEMM and of attention
      EXPECT_NEAR(forward * static_cast<double>(tp), gpt::gpt_forward_flops(g, 4, g.max_seq_len), 1e-6) << name << tp;
      EXPECT_NEAR(backward, 2.0 * forward, 1e-6) << name << tp;
    }
  }
}

TEST(KernelCalls, GptBlockMirrorsTheTrainersOrder) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-tiny");  // C 256, 8 heads, T 128
  const KernelCalls k = gpt_unit_kernel_calls(g, GptUnitKind::block, 2, 2, 128, 2);
  std::vector<std::string> forward;
  for (const KernelCall& c : k.forward) forward.push_back(c.kernel);
  EXPECT_EQ(forward, (std::vector<std::string>{"layernorm_forward", "matmul_forward", "attention_forward",
                                               "matmul_forward", "residual_forward", "layernorm_forward",
                                               "matmul_forward", "gelu_forward", "matmul_forward",
                                               "residual_forward"}));
  // qkv of this rank's 4 heads: (BT, C) x (3C/t, C); the MLP's 4C/t columns
  EXPECT_EQ(k.forward[1].shape, (std::vector<std::int64_t>{256, 256, 384}));
  EXPECT_EQ(k.forward[2].shape, (std::vector<std::int64_t>{2, 128, 128, 4}));
  EXPECT_EQ(k.forward[6].shape, (std::vector<std::int64_t>{256, 256, 512}));
  EXPECT_EQ(k.backward.front().kernel, "fill");
  EXPECT_EQ(k.backward.front().shape, (std::vector<std::int64_t>{256 * 256 * 2}));  // din, 2-byte storage
  const KernelCalls head = gpt_unit_kernel_calls(g, GptUnitKind::head, 2, 2, 128, 2);
  EXPECT_EQ(head.forward.back().kernel, "crossentropy_shard_finish");
}

TEST(KernelCalls, ResnetConvolutionsAreTheTrainersFlops) {
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const std::size_t units = resnet::resnet_pipeline_units(r).size();
  double forward = 0, backward = 0;
  for (std::size_t u = 0; u < units; ++u) {
    const KernelCalls k = resnet_unit_kernel_calls(r, u, 16, 4);
    forward += compute_size(k.forward);
    backward += compute_size(k.backward);
  }
  EXPECT_NEAR(forward, resnet::resnet_forward_flops(r, 16), 1e-3);
  // the stem computes no input gradient: its backward is the weight gradient alone
  const KernelCalls stem = resnet_unit_kernel_calls(r, 0, 16, 4);
  EXPECT_NEAR(backward, 2.0 * forward - compute_size(stem.forward), 1e-3);
  EXPECT_EQ(stem.backward.back().kernel, "conv2d_backward_weight");
  EXPECT_TRUE(resnet_kernel_calls_known(r));
  EXPECT_FALSE(resnet_kernel_calls_known(resnet::resnet_config_by_name("resnet-50")));
  EXPECT_THROW(resnet_unit_kernel_calls(resnet::resnet_config_by_name("resnet-50"), 1, 1, 4), UserError);
}

TEST(KernelProfile, MeasuredShapeInterpolatedSizeAndProportionBeyond) {
  KernelProfile p;
  p.add({"gelu_forward", "fp32", 1, 1, {1000}, 1000, 1e-6});
  p.add({"gelu_forward", "fp32", 1, 1, {100000}, 100000, 1e-3});
  p.add({"gelu_forward", "fp32", 2, 1, {1000}, 1000, 7e-7});
  p.add({"gelu_forward", "fp32", 1, 2, {1000}, 1000, 1.5e-6});  // two ranks busy on the node
  const auto at = [&](std::int64_t n, int devices = 1) {
    return p.seconds({"gelu_forward", {n}, static_cast<double>(n)}, "fp32", devices);
  };
  EXPECT_DOUBLE_EQ(*at(1000), 1e-6);
  EXPECT_DOUBLE_EQ(*at(1000, 2), 7e-7);
  EXPECT_NEAR(*at(10000), 1e-4 / std::sqrt(10.0), 1e-12);  // halfway in log size: geometric mean
  EXPECT_NEAR(*at(200000), 2e-3, 1e-12);
  EXPECT_NEAR(*at(100), 1e-7, 1e-15);
  EXPECT_FALSE(at(1000, 4).has_value());
  EXPECT_FALSE(p.seconds({"gelu_backward", {1000}, 1000}, "fp32", 1).has_value());
  EXPECT_TRUE(p.covers("fp32", 2));
  EXPECT_DOUBLE_EQ(*p.seconds({"gelu_forward", {1000}, 1000}, "fp32", 1, 2), 1.5e-6);
  EXPECT_TRUE(p.covers("fp32", 1, 2));
  EXPECT_FALSE(p.covers("fp32", 2, 2));
  EXPECT_FALSE(p.covers("bf16", 1));

  const auto file = std::filesystem::temp_directory_path() / "sb_kernel_profile_test.csv";
  p.save(file);
  const KernelProfile back = KernelProfile::load(file);
  ASSERT_EQ(back.times().size(), 4u);
  EXPECT_EQ(back.times()[3].ranks, 2);
  EXPECT_EQ(back.times()[1].shape, (std::vector<std::int64_t>{100000}));
  EXPECT_DOUBLE_EQ(*back.seconds({"gelu_forward", {10000}, 10000}, "fp32", 1), *at(10000));
  {
    std::ofstream bad(file);
    bad << "kernel,precision,devices,ranks,shape,size,seconds\ngelu_forward,fp32,one,1,1000,1000,1e-6\n";
  }
  try {
    KernelProfile::load(file);
    FAIL() << "a bad line loaded";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(file);
}

// Every call of gpt-nano timed at 1 ms: a micro-batch's forward and backward are the call
// counts in milliseconds, and the step is their sum plus the optimizer's calls.
TEST(StepPrediction, KernelTimesMakeTheComputeTime) {
  SiteProfile machine = site("this-machine");
  auto times = std::make_shared<KernelProfile>();
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-nano");
  std::size_t forward = 0, backward = 0;
  for (GptUnitKind unit : {GptUnitKind::embedding, GptUnitKind::block, GptUnitKind::head}) {
    const KernelCalls k = gpt_unit_kernel_calls(g, unit, 1, 8, 64, 4);
    const std::size_t times_called = unit == GptUnitKind::block ? 2 : 1;
    forward += times_called * k.forward.size();
    backward += times_called * k.backward.size();
    for (const auto* list : {&k.forward, &k.backward})
      for (const KernelCall& c : *list) times->add({c.kernel, "fp32", 1, 1, c.shape, c.size, 1e-3});
  }
  for (const char* kernel : {"fill", "adamw_step"}) times->add({kernel, "fp32", 1, 1, {1000}, 1000, 1e-3});
  machine.kernel_times = times;

  plan::TrainConfig c = gpt_case(1, 1, 1, 1, 1, 1, 16, 8, "fp32");
  c.model = plan::ModelSpec{};
  c.model.name = "gpt-nano";
  c.threads = 1;
  c.optimizer.type = "adamw";
  const Prediction p = predict_step(c, machine);
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_TRUE(p.kernel_timed);
  EXPECT_NEAR(p.compute_s, 2 * (forward + backward) * 1e-3, 1e-12);  // two micro-batches of 8
  EXPECT_GT(p.optimizer_s, 0.0);
  EXPECT_NEAR(p.step_time_s, p.compute_s + p.optimizer_s, 1e-12);

  c.threads = 2;  // no times for two cores: FLOPs at the datasheet peak
  EXPECT_FALSE(predict_step(c, machine).kernel_timed);
}

}  // namespace
}  // namespace sb::costmodel
