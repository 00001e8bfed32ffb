// SPDX-License-Identifier: Apache-2.0
// Bad input gives one clear sentence on stderr, exit code 2, and no result file.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "runtime/device_runtime.hpp"

namespace sb::testing {
namespace {

const char* kGoodCase = "model: gpt-nano\ndata: {dataset: sotu}\nsteps: 2\nbatch: {global: 2}\n";

struct BadInput {
  const char* name;
  std::string config;           // YAML text written to case.yaml ("" = do not write)
  std::string extra_args;       // appended to the train command
  std::string expected_message; // must appear in stderr
};

// Test names show the case, not the bytes of the struct.
void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.name; }

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, OneSentenceExitTwoNoFile) {
  const BadInput& bad = GetParam();
  Scratch scratch;
  const auto config = scratch.path("case.yaml");
  if (!bad.config.empty()) scratch.write("case.yaml", bad.config);
  const auto out = scratch.path("out.h5");
  const auto r = scratch.run("train --config " + config.string() + " --out " + out.string() + " " + bad.extra_args);
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(bad.expected_message), std::string::npos)
      << "stderr was: " << r.stderr_text;
  EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("terminate"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out)) << "a result file was left behind";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInputTest,
    ::testing::Values(
        BadInput{"missing_data", "model: gpt-nano\ndata: {dataset: sotu, path: /nonexistent/sotu}\nsteps: 2\n", "",
                 "State of the Union data folder '/nonexistent/sotu' does not exist"},
        BadInput{"unknown_key", std::string(kGoodCase) + "stpes: 3\n", "", "unknown key 'stpes'"},
        BadInput{"unknown_nested_key", std::string(kGoodCase) + "optimizer: {lr: 1e-3, betas: 0.9}\n", "",
                 "unknown key 'optimizer.betas'"},
        BadInput{"malformed_yaml", "model: gpt-nano\ndata: {dataset: sotu\nsteps: 2\n", "", "malformed YAML"},
        BadInput{"unknown_model", "model: gpt-huge\ndata: {dataset: sotu}\nsteps: 2\n", "", "unknown model 'gpt-huge'"},
        BadInput{"negative_steps", "model: gpt-nano\ndata: {dataset: sotu}\nsteps: -5\n", "",
                 "'steps' must be a positive integer, got -5"},
        BadInput{"non_numeric_lr", std::string(kGoodCase) + "optimizer: {lr: fast}\n", "",
                 "'optimizer.lr' has value 'fast', which is not a number"},
        BadInput{"missing_config", "", "", "cannot read config file"},
        BadInput{"unknown_dataset", "model: gpt-nano\ndata: {dataset: wikipedia}\nsteps: 2\n", "",
                 "'data.dataset' is 'wikipedia' but must be one of: sotu, spam-assassin, mnist, fashion-mnist"},
        BadInput{"heads_not_dividing", "model: {layers: 1, hidden: 10, heads: 3, seq_len: 8, vocab: 256}\ndata: sotu\n", "",
                 "model.hidden (10) must be divisible by model.heads (3)"},
        BadInput{"seq_len_too_long", std::string(kGoodCase) + "seq_len: 65\n", "",
                 "seq_len 65 exceeds the model's maximum sequence length 64"},
        BadInput{"bad_set", kGoodCase, "--set steps", "--set 'steps' must have the form key=value"},
        BadInput{"set_negative", kGoodCase, "--set steps=-1", "'steps' must be a positive integer, got -1"},
        BadInput{"multi_rank_on_one", std::string(kGoodCase) + "strategy: {dp: 2}\n", "",
                 "the strategy needs 2 ranks (dp×tp×pp) but the MPI world has 1; launch with mpirun -np 2"},
        BadInput{"tp_not_dividing_heads", std::string(kGoodCase) + "strategy: {tp: 3}\n", "",
                 "strategy.tp 3 must divide the 4 attention heads of model gpt-nano"},
        BadInput{"pp_more_than_layers", std::string(kGoodCase) + "strategy: {pp: 3}\n", "",
                 "strategy.pp 3 asks for more pipeline stages than model gpt-nano has 2 (blocks)"},
        BadInput{"tp_on_resnet", "model: resnet-mini\ndata: mnist\nsteps: 2\nstrategy: {tp: 2}\n", "",
                 "strategy.tp 2 splits a GPT's attention heads and MLP; model resnet-mini trains with dp and pp"},
        BadInput{"micro_batches_not_dividing", "model: gpt-nano\ndata: sotu\nsteps: 2\nbatch: {global: 6}\n"
                 "strategy: {micro_batches: 4}\n", "",
                 "must be a multiple of strategy.micro_batches (4)"},
        BadInput{"micro_keys_disagree", "model: gpt-nano\ndata: sotu\nsteps: 2\nbatch: {global: 8, micro: 4}\n"
                 "strategy: {micro_batches: 4}\n", "",
                 "batch.micro 4 × strategy.micro_batches 4 must equal the batch per rank"},
        BadInput{"unknown_site", std::string(kGoodCase) + "site: atlantis\n", "",
                 "site 'atlantis' is neither a file nor a profile in"},
        BadInput{"main_grads_storage_on_cuda",
                 "model: gpt-nano\ndata: sotu\nsteps: 2\ndevice: cuda\n"
                 "precision: {dtype: bf16, main_grads: storage}\n",
                 "",
                 "precision.main_grads storage keeps the bf16 main gradients in host memory; on device cuda the "
                 "trainer keeps fp32 main gradients (precision.main_grads: fp32)"},
        BadInput{"interleave_without_pipeline", std::string(kGoodCase) + "strategy: {interleave: 2}\n", "",
                 "strategy.interleave 2 splits each pipeline rank's layers into virtual stages; it needs strategy.pp > 1"},
        BadInput{"interleave_resnet_too_few_units",
                 "model: resnet-mini\ndata: mnist\nsteps: 2\nbatch: {global: 8}\n"
                 "strategy: {pp: 4, interleave: 3, micro_batches: 4}\n", "",
                 "strategy.pp 4 × strategy.interleave 3 = 12 model chunks, but model resnet-mini has 8"},
        BadInput{"selective_recompute_on_resnet",
                 "model: resnet-mini\ndata: mnist\nsteps: 2\nstrategy: {recompute: selective}\n", "",
                 "strategy.recompute selective recomputes attention, which model resnet-mini (a ResNet) has none of; "
                 "use recompute none or full"},
        BadInput{"recompute_unknown_mode", std::string(kGoodCase) + "strategy: {recompute: partial}\n", "",
                 "'strategy.recompute' is 'partial' but must be one of: none, selective, full"},
        // "not compiled: cuda (...; use device: cpu)" without CUDA; with it and no GPU, "no CUDA
        // device visible on this machine; use device: cpu" (tests/cuda trains where one is).
        BadInput{"cuda_unavailable", std::string(kGoodCase) + "device: cuda\n", "", "use device: cpu"},
        // what device cuda refuses, in any build, before it looks for a GPU
        BadInput{"cuda_resnet", "model: resnet-mini\ndata: mnist\nsteps: 2\ndevice: cuda\n", "",
                 "model resnet-mini on device cuda: the GPU trainer runs the GPT language model so far"},
        BadInput{"cuda_ring_all_reduce", std::string(kGoodCase) + "device: cuda\nstrategy: {dp: 2}\n", "",
                 "strategy.allreduce ring on device cuda: the ring all-reduce adds in host memory; set "
                 "strategy.allreduce: mpi"},
        BadInput{"cuda_zero", std::string(kGoodCase) + "device: cuda\nstrategy: {zero: 1}\n", "",
                 "strategy.zero 1 on device cuda"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

TEST(BadData, TruncatedCorpusIsNamed) {
  Scratch scratch;
  const auto data = scratch.path("sotu");
  std::filesystem::copy(test_data_dir() / "sotu", data);
  std::filesystem::resize_file(data / "1790_george_washington_n.txt", 100);
  const auto config = scratch.write("case.yaml", "model: gpt-nano\ndata: {dataset: sotu, path: " + data.string() +
                                                     "}\nsteps: 2\n");
  const auto out = scratch.path("out.h5");
  const auto r = scratch.run("train --config " + config.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("truncated or modified"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The GPU suite and config on a machine without a GPU: each parses (no config error comes
// first), then one sentence, exit 2, and nothing started or written.
TEST(NoGpu, GpuSuiteIsRefusedBeforeAnyCase) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible here: the suite would run";
  Scratch scratch;
  const auto out = scratch.path("results");
  const auto r = scratch.run("run " + std::string(SB_SOURCE_DIR) + "/suites/gpu.yaml --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("gpu.yaml: case 'gpt2-124m-fp32' runs on device cuda, but no CUDA device visible on "
                               "this machine"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out)) << "the suite started before refusing";
}

TEST(NoGpu, Gpt2CudaConfigIsRefusedWithoutAGpu) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible here: the config would train";
  Scratch scratch;
  const auto out = scratch.path("out.h5");
  const auto r = scratch.run("train --config " + std::string(SB_SOURCE_DIR) +
                             "/models/gpt/configs/gpt2-124m-cuda.yaml --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  // a build without CUDA says "not compiled: cuda" first
  const bool refused = r.stderr_text.find("no CUDA device visible on this machine") != std::string::npos ||
                       r.stderr_text.find("not compiled: cuda") != std::string::npos;
  EXPECT_TRUE(refused) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(BadInspect, NotAResultFile) {
  Scratch scratch;
  const auto bogus = scratch.write("bogus.h5", "not hdf5");
  const auto r = scratch.run("inspect " + bogus.string());
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("bogus.h5"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace sb::testing
