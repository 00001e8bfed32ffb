// SPDX-License-Identifier: Apache-2.0
// The run context: every documented key, sensible values without MPI_Init, the UTC format.
// Leaves out multi-host gathering (needs mpirun; exercised by the trainer's MPI tests).
#include <gtest/gtest.h>

#include <regex>

#include "core/cpu_isa.hpp"
#include "metrics/run_context.hpp"
#include "parallel/nccl_communicator.hpp"
#include "sb_git_revision.hpp"  // SB_GIT_SHA, SB_GIT_DESCRIBE: the commit that built this

namespace sb::metrics {
namespace {

TEST(RunContext, HasEveryKeyInOrder) {
  const io::Attributes context = collect_run_context(3);
  std::vector<std::string> keys;
  for (const auto& [key, value] : context) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "hostnames", "host_count", "rank_nodes", "rank_node_ranks", "cpu_model", "cores", "threads",
                      "cpu_scaling_governor", "gpu_model", "driver", "mpi_library",
                      "mpi_standard", "nccl", "cuda_aware_mpi", "hdf5", "kokkos", "blas",
                      "blas_threading", "blas_library", "onednn", "cpu_isa", "conv2d_fp32", "conv2d_bf16",
                      "matmul_bf16", "matmul_fp16", "int8_matmul", "fp16_convert", "compiler", "build_type", "git_sha", "omp_proc_bind", "omp_places"}));
  const auto value = [&](const std::string& key) {
    for (const auto& [k, v] : context) {
      if (k == key) return io::to_string(v);
    }
    return std::string("(missing)");
  };
  EXPECT_EQ(value("threads"), "3");
  EXPECT_EQ(value("host_count"), "1");
  EXPECT_EQ(value("gpu_model"), "none");
  EXPECT_EQ(value("nccl"), parallel::nccl_version());
  EXPECT_TRUE(value("cuda_aware_mpi") == "yes" || value("cuda_aware_mpi") == "no" ||
              value("cuda_aware_mpi") == "unknown") << value("cuda_aware_mpi");
  EXPECT_EQ(value("hdf5").rfind("1.", 0), 0u) << value("hdf5");
  EXPECT_EQ(value("kokkos").rfind("3.", 0), 0u) << value("kokkos");
  EXPECT_NE(value("blas").find("OpenBLAS"), std::string::npos) << value("blas");
  EXPECT_EQ(value("onednn").rfind("2.", 0), 0u) << value("onednn");
  EXPECT_EQ(value("cpu_isa"), onednn_cpu_isa());
  EXPECT_EQ(value("conv2d_fp32"), conv2d_implementation("fp32"));
  EXPECT_EQ(value("conv2d_bf16"), conv2d_implementation("bf16"));
  EXPECT_EQ(value("int8_matmul"), int8_matmul_implementation());
  EXPECT_EQ(value("matmul_bf16"), matmul_implementation("bf16"));
  EXPECT_EQ(value("matmul_fp16"), matmul_implementation("fp16"));
  EXPECT_EQ(value("fp16_convert"), fp16_conversion_implementation());
  EXPECT_NE(value("mpi_library"), "unknown");
  EXPECT_EQ(value("mpi_library").find('\n'), std::string::npos);
  EXPECT_NE(value("cpu_model"), "");
  EXPECT_EQ(value("git_sha"), SB_GIT_SHA);
}

TEST(RunContext, UtcTimeIsIso8601) {
  EXPECT_TRUE(std::regex_match(utc_now_iso8601(),
                               std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")));
}

}  // namespace
}  // namespace sb::metrics
