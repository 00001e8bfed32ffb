// SPDX-License-Identifier: Apache-2.0
// `scalebench plan` as users and scripts meet it: the acceptance case (GPT-175B on 1024 H100,
// global batch 1536, sequence 2048) answers in JSON with a ranked list and grouped reasons,
// quickly; a model too big for every configuration exits 1 with reasons; the human table.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace sb::testing {
namespace {

const std::string kH100 = std::string(SB_SOURCE_DIR) + "/jobs/sites/h100-sxm-dgx.yaml";

TEST(PlanCommand, Gpt175bOn1024H100RanksAndExplains) {
  Scratch scratch;
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = scratch.run("plan --model gpt-175b --site " + kH100 +
                                      " --devices 1024 --global-batch 1536 --seq-len 2048 --top 10 --json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_GE(j["candidates"].get<std::int64_t>(), 1000);
  EXPECT_GT(j["feasible_count"].get<std::int64_t>(), 10);
  ASSERT_EQ(j["feasible"].size(), 10u);
  double previous = 0;
  for (const nlohmann::json& c : j["feasible"]) {
    EXPECT_EQ(c["feasible"], true);
    EXPECT_EQ(c["dp"].get<int>() * c["tp"].get<int>() * c["pp"].get<int>(), 1024);
    EXPECT_LE(c["tp"].get<int>(), 8);
    for (const char* key : {"step_time_s", "compute_s", "comm_s", "bubble_s", "optimizer_s", "tokens_per_s",
                            "tflops_per_device", "mfu"})
      EXPECT_GT(c[key].get<double>(), 0.0) << key;
    EXPECT_LT(c["mfu"].get<double>(), 1.0);
    EXPECT_LE(c["memory_bytes"]["total"].get<double>(), 80.0 * 1024 * 1024 * 1024);
    EXPECT_GE(c["step_time_s"].get<double>(), previous);
    previous = c["step_time_s"].get<double>();
  }
  bool memory = false, node = false;
  for (const nlohmann::json& g : j["rejected"]) {
    EXPECT_GT(g["count"].get<std::int64_t>(), 0);
    EXPECT_EQ(g["example"]["feasible"], false);
    EXPECT_FALSE(g["example"]["reason"].get<std::string>().empty());
    memory = memory || g["reason"] == "too little memory";
    node = node || g["reason"] == "tp beyond one node";
  }
  EXPECT_TRUE(memory && node) << j["rejected"].dump();
  // fp8 is searched where the profile has a fitted fp8 efficiency, and ranks first; with tp > 1
  // sequence parallelism under the GEMMs (tp_overlap) is searched beside plain tp and ranks first,
  // as do virtual stages with their sends beside the compute and 16-bit gradient reduction, as
  // NVIDIA's published runs take them; each precision's best MFU (against its own dense peak)
  // lies in the range NVIDIA publishes for GPT-3 175B on 128-2048 H100
  // (dgxc-benchmarking nemo_megatron/README_175b.md: BF16 52.4-53.5%, FP8 37.3-39.5%; measured
  // here 52.6% and 37.5%, tp 8, pp 8, 12 chunks a rank); plain tp, its collectives exposed, below
  // that (Megatron-LM's README: 41-48% MFU for its 2B-462B runs)
  EXPECT_EQ(j["feasible"][0]["precision"], "fp8");
  EXPECT_EQ(j["feasible"][0]["tp_overlap"], true);
  EXPECT_EQ(j["feasible"][0]["sequence_parallel"], true);
  EXPECT_GT(j["feasible"][0]["interleave"].get<int>(), 1);
  EXPECT_EQ(j["feasible"][0]["p2p_overlap"], true);
  EXPECT_EQ(j["feasible"][0]["main_grads"], "storage");
  const CommandResult all = scratch.run("plan --model gpt-175b --site " + kH100 +
                                        " --devices 1024 --global-batch 1536 --seq-len 2048 --top 1000000 --json");
  ASSERT_EQ(all.exit_code, 0) << all.stderr_text;
  const nlohmann::json every = nlohmann::json::parse(all.stdout_text);
  std::map<std::string, double> best_mfu, best_plain_mfu;
  for (const nlohmann::json& c : every["feasible"]) {  // the first of each is the fastest
    best_mfu.emplace(c["precision"].get<std::string>(), c["mfu"].get<double>());
    if (c["tp"].get<int>() > 1 && !c["tp_overlap"].get<bool>())
      best_plain_mfu.emplace(c["precision"].get<std::string>(), c["mfu"].get<double>());
  }
  ASSERT_TRUE(best_mfu.count("bf16") && best_mfu.count("fp8"));
  EXPECT_GE(best_mfu["bf16"], 0.524);
  EXPECT_LE(best_mfu["bf16"], 0.535);
  EXPECT_GE(best_mfu["fp8"], 0.373);
  EXPECT_LE(best_mfu["fp8"], 0.395);
  EXPECT_GE(best_plain_mfu["bf16"], 0.41);
  EXPECT_LT(best_plain_mfu["bf16"], best_mfu["bf16"]);
  // the product asks for < 5 s; a shared 2-core test machine gets a wide margin, and a sanitizer
  // build the factor SB_TEST_TIMEOUT_SCALE on top
  EXPECT_LT(seconds, 30.0 * SB_TEST_TIMEOUT_SCALE);
  std::printf("plan gpt-175b on 1024 H100: %.2f s, %lld candidates\n", seconds,
              static_cast<long long>(j["candidates"].get<std::int64_t>()));
}

// A second published job, held out of the H100's fitted constants (e_max_fp8 is fitted on NVIDIA's
// GPT-3 175B runs alone): Llama 3 70B in FP8 on 64 H100 at global batch 256 and sequence 8192,
// which Megatron-Bridge's performance summary (26.02 container, DGX-H100 LLAMA3_70B FP8-CS)
// publishes at 1621 tokens/s per GPU with tp 4, pp 8 and 5 virtual stages. plan finds that layout
// (within the 5% the replays hold) and answers a best within 10% of the published figure.
// Every feasible candidate of a plan on the H100 profile with the fused attention, in JSON.
nlohmann::json flash_plan_on_h100(const std::string& model, int devices, int global_batch, int seq_len) {
  Scratch scratch;
  const CommandResult r = scratch.run(fmt::format("plan --model {} --site {} --devices {} --global-batch {} --seq-len {} "
                                                  "--attention flash --top 1000000 --json",
                                                  model, kH100, devices, global_batch, seq_len));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return r.exit_code == 0 ? nlohmann::json::parse(r.stdout_text) : nlohmann::json{{"feasible", nlohmann::json::array()}};
}

TEST(PlanCommand, Llama3On64H100AnswersNearMegatronBridgesPublishedRun) {
  const nlohmann::json j = flash_plan_on_h100("llama3-70b", 64, 256, 8192);
  ASSERT_FALSE(j["feasible"].empty());
  constexpr double kPublished = 1621.0;  // tokens/s per GPU
  const auto per_gpu = [](const nlohmann::json& c) { return c["tokens_per_s"].get<double>() / 64.0; };
  const nlohmann::json& best = j["feasible"][0];
  EXPECT_EQ(best["precision"], "fp8");
  EXPECT_NEAR(per_gpu(best) / kPublished, 1.0, 0.10) << best.dump();
  bool found = false;
  for (const nlohmann::json& c : j["feasible"])
    if (c["precision"] == "fp8" && c["tp"] == 4 && c["pp"] == 8 && c["interleave"] == 5 && c["micro_batch"] == 1 &&
        c["zero"] == 1 && c["recompute"] == "none" && c["tp_overlap"] == true) {
      found = true;
      EXPECT_NEAR(per_gpu(c) / kPublished, 1.0, 0.05) << c.dump();
    }
  EXPECT_TRUE(found) << "Megatron-Bridge's layout is not among the feasible candidates";
}

// Llama 3 405B's pre-training ran 126 layers on 16 pipeline stages at tensor 8 and BF16 MFU 43%
// on 8,192 H100 with 2,048 sequences of 8,192 tokens a step (Llama Team 2024, arXiv:2407.21783,
// Table 4). plan searches pipelines that do not divide the layers, so its best BF16 layout is
// tensor 8 over an uneven pipeline, within 10% of that MFU (pipelines that divide 126 alone give
// 37.9%: 12% short).
TEST(PlanCommand, Llama3405bOn8192H100AnswersNearMetasPublishedMfu) {
  const nlohmann::json j = flash_plan_on_h100("llama3.1-405b", 8192, 2048, 8192);
  const auto bf16 = std::find_if(j["feasible"].begin(), j["feasible"].end(),
                                 [](const nlohmann::json& c) { return c["precision"] == "bf16"; });
  ASSERT_NE(bf16, j["feasible"].end());
  EXPECT_NEAR((*bf16)["mfu"].get<double>() / 0.43, 1.0, 0.10) << bf16->dump();
  EXPECT_EQ((*bf16)["tp"], 8);
  EXPECT_NE(126 % (*bf16)["pp"].get<int>(), 0) << bf16->dump();
}

// With no --seq-len the plan is at the model's longest sequence (Llama 3.1: 131,072 tokens); when
// nothing fits there the answer says so and which option plans another length.
TEST(PlanCommand, NothingFitsAtTheLongestSequenceSaysHowToPlanAnother) {
  Scratch scratch;
  const CommandResult r = scratch.run("plan --model llama3.1-70b --site " + kH100 + " --devices 8 --global-batch 8");
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("no feasible configuration\n(at the model's longest sequence, 131072 tokens: "
                               "--seq-len plans the length you train at)"), std::string::npos) << r.stdout_text;
  const CommandResult given = scratch.run("plan --model llama3.1-70b --site " + kH100 +
                                          " --devices 8 --global-batch 8 --seq-len 8192");
  EXPECT_EQ(given.exit_code, 1) << given.stderr_text;
  EXPECT_EQ(given.stdout_text.find("longest sequence"), std::string::npos) << given.stdout_text;
}

TEST(PlanCommand, ImpossibleRequestExitsOneWithReasons) {
  Scratch scratch;
  const CommandResult r = scratch.run("plan --model gpt-175b --site " + kH100 + " --devices 4 --global-batch 8 --json");
  ASSERT_EQ(r.exit_code, 1) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["feasible_count"].get<std::int64_t>(), 0);
  EXPECT_TRUE(j["feasible"].empty());
  ASSERT_FALSE(j["rejected"].empty());
  EXPECT_EQ(j["rejected"][0]["reason"], "too little memory");
  EXPECT_NE(j["rejected"][0]["example"]["reason"].get<std::string>().find("needs"), std::string::npos);
  const CommandResult human = scratch.run("plan --model gpt-175b --site " + kH100 + " --devices 4 --global-batch 8");
  EXPECT_EQ(human.exit_code, 1);
  EXPECT_NE(human.stdout_text.find("no feasible configuration"), std::string::npos) << human.stdout_text;
  EXPECT_NE(human.stdout_text.find("too little memory ("), std::string::npos) << human.stdout_text;
}

// A site of the user's own without a gemm: model ranks at the datasheet peak: the table says so
// (the shipped H100 profile, fitted, does not); each candidate's JSON carries `calibrated`.
TEST(PlanCommand, ASiteWithoutAGemmModelIsSaidToRankAtThePeak) {
  Scratch scratch;
  const auto site = scratch.write("no-gemm.yaml", site_profile_without(kH100, "gemm"));
  const std::string request = " --devices 16 --global-batch 32 --top 3";
  const CommandResult bare = scratch.run("plan --model gpt-1.3b --site " + site.string() + request);
  ASSERT_EQ(bare.exit_code, 0) << bare.stderr_text;
  EXPECT_NE(bare.stdout_text.find("not calibrated: the site has no gemm: model"), std::string::npos) << bare.stdout_text;
  const CommandResult fitted = scratch.run("plan --model gpt-1.3b --site " + kH100 + request);
  ASSERT_EQ(fitted.exit_code, 0) << fitted.stderr_text;
  EXPECT_EQ(fitted.stdout_text.find("not calibrated"), std::string::npos) << fitted.stdout_text;
  const CommandResult json = scratch.run("plan --model gpt-1.3b --site " + site.string() + request + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(json.stdout_text)["feasible"][0]["calibrated"], false) << json.stdout_text;
}

TEST(PlanCommand, HumanTableAndUnknownModel) {
  Scratch scratch;
  const CommandResult r = scratch.run("plan --model gpt-1.3b --site " + kH100 + " --devices 16 --global-batch 32 --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("tokens/s"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("\n   3 "), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("\n   4 "), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("rejected:"), std::string::npos) << r.stdout_text;
  const CommandResult bad = scratch.run("plan --model gpt-9x --site " + kH100 + " --devices 16");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.stderr_text.find("unknown model 'gpt-9x'"), std::string::npos) << bad.stderr_text;
}

// --attention and --kernels set every candidate's model.attention and model.kernels: the fused
// kernel keeps no scores (less activation memory for the same layout), compute capability 8.0's
// kernels on an H100 run slower and leave fp8 out; the JSON names both; a site without sm80
// constants and unknown values are refused with the option's name.
TEST(PlanCommand, AttentionAndKernelsApplyToEveryCandidate) {
  Scratch scratch;
  const auto plan = [&](const std::string& extra) {
    const CommandResult r = scratch.run("plan --model gpt-1.3b --site " + kH100 +
                                        " --devices 8 --global-batch 64 --top 200 --json" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.exit_code == 0 ? nlohmann::json::parse(r.stdout_text) : nlohmann::json();
  };
  const nlohmann::json unfused = plan(""), flash = plan(" --attention flash"),
                       sm80 = plan(" --attention flash --kernels sm80");
  ASSERT_FALSE(unfused.is_null() || flash.is_null() || sm80.is_null());
  EXPECT_EQ(unfused["attention"], "unfused");
  EXPECT_EQ(flash["attention"], "flash");
  EXPECT_EQ(flash["kernels"], "native");
  EXPECT_EQ(sm80["kernels"], "sm80");
  // the same layout (the fastest one without the fused kernel) keeps fewer activation bytes with it
  const nlohmann::json& best = unfused["feasible"][0];
  const auto same = [&](const nlohmann::json& j) {
    for (const nlohmann::json& c : j["feasible"])
      if (c["dp"] == best["dp"] && c["tp"] == best["tp"] && c["pp"] == best["pp"] &&
          c["micro_batch"] == best["micro_batch"] && c["precision"] == best["precision"] &&
          c["zero"] == best["zero"] && c["recompute"] == best["recompute"] && c["schedule"] == best["schedule"])
        return c;
    return nlohmann::json();
  };
  ASSERT_FALSE(same(flash).is_null());
  EXPECT_LT(same(flash)["memory_bytes"]["activations"].get<double>(),
            best["memory_bytes"]["activations"].get<double>());
  // sm80: no fp8 candidate, and the fastest bf16 layout is slower than the native one
  for (const nlohmann::json& c : sm80["feasible"]) EXPECT_NE(c["precision"], "fp8") << c;
  const auto fastest_bf16 = [](const nlohmann::json& j) {
    for (const nlohmann::json& c : j["feasible"])
      if (c["precision"] == "bf16") return c["step_time_s"].get<double>();
    return 0.0;
  };
  EXPECT_GT(fastest_bf16(sm80), 1.1 * fastest_bf16(flash));
  const CommandResult a100 = scratch.run("plan --model gpt-1.3b --site a100-80gb-dgx --devices 8 --kernels sm80");
  EXPECT_EQ(a100.exit_code, 2) << a100.stderr_text;
  EXPECT_NE(a100.stderr_text.find("--kernels sm80 needs the site's 'gemm.e_max_sm80'"), std::string::npos)
      << a100.stderr_text;
  const CommandResult bad = scratch.run("plan --model gpt-1.3b --site " + kH100 + " --devices 8 --attention fused");
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("--attention is 'fused'; it must be unfused or flash"), std::string::npos)
      << bad.stderr_text;
}

}  // namespace
}  // namespace sb::testing
