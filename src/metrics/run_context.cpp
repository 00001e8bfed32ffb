// SPDX-License-Identifier: Apache-2.0
// Collects the run context from /proc, /sys, MPI, HDF5, Kokkos and OpenBLAS.
// Leaves out hardware counters and cache sizes (the calibration records what it measures).
#include "metrics/run_context.hpp"

#include "core/check.hpp"
#include "core/cpu_identity.hpp"
#include "core/cpu_isa.hpp"
#include "parallel/nccl_communicator.hpp"
#include "parallel/node_placement.hpp"
#include "sb_git_revision.hpp"  // SB_GIT_SHA, SB_GIT_DESCRIBE: the commit that built this

#include <Kokkos_Macros.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

extern "C" char* openblas_get_config(void);
extern "C" int openblas_get_parallel(void);

namespace sb::metrics {

namespace {

// Every rank's node (node_placement.hpp); this process alone outside MPI or without a
// communicator.
parallel::NodePlacement placement_of(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && initialized && !finalized) return parallel::gather_node_placement(comm);
  parallel::NodePlacement alone;
  alone.hosts = {host_name()};
  alone.rank_nodes = {0};
  alone.rank_node_ranks = {parallel::launcher_local_rank().value_or(0)};
  return alone;
}

// "performance" is what benchmarks want; "powersave" or "ondemand" make timings drift.
std::string cpu_scaling_governor() {
  std::ifstream governor("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::string value;
  return std::getline(governor, value) ? value : "unknown";
}

std::string mpi_library() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return "unknown";
  std::string text(version, static_cast<std::size_t>(std::max(length, 0)));
  text = text.substr(0, text.find('\n'));
  return text.substr(0, text.find_last_not_of(" \t\r\n") + 1);
}

std::string mpi_standard() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
#ifdef H5_HAVE_PARALLEL
  return fmt::format("{}.{}.{} (parallel)", major, minor, release);
#else
  return fmt::format("{}.{}.{}", major, minor, release);
#endif
}

std::string kokkos_version() {
  std::string backends;
#ifdef KOKKOS_ENABLE_CUDA
  backends += " Cuda";
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  backends += " OpenMP";
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  backends += " Serial";
#endif
  return fmt::format("{}.{}.{}{}", KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100,
                     KOKKOS_VERSION % 100, backends.empty() ? "" : " (" + backends.substr(1) + ")");
}

std::string blas_threading() {
  switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
    default: return "unknown";
  }
}

std::string trimmed(std::string text) {
  const auto end = text.find_last_not_of(" \t\r\n");
  text.resize(end == std::string::npos ? 0 : end + 1);
  return text;
}

}  // namespace

io::Attributes collect_run_context(int threads, MPI_Comm comm) {
  const parallel::NodePlacement placement = placement_of(comm);
  io::Attributes context;
  context.emplace_back("hostnames", fmt::format("{}", fmt::join(placement.hosts, ",")));
  context.emplace_back("host_count", static_cast<std::int64_t>(placement.nodes()));
  // by world rank: the index of its host in hostnames, and its rank on that node
  context.emplace_back("rank_nodes", placement.rank_nodes);
  context.emplace_back("rank_node_ranks", placement.rank_node_ranks);
  context.emplace_back("cpu_model", cpu_model_name());
  context.emplace_back("cores", static_cast<std::int64_t>(std::thread::hardware_concurrency()));
  context.emplace_back("threads", static_cast<std::int64_t>(threads));
  context.emplace_back("cpu_scaling_governor", cpu_scaling_governor());
  context.emplace_back("gpu_model", std::string("none"));
  context.emplace_back("driver", std::string("none"));
  context.emplace_back("mpi_library", mpi_library());
  context.emplace_back("mpi_standard", mpi_standard());
  context.emplace_back("nccl", parallel::nccl_version());
  context.emplace_back("cuda_aware_mpi", parallel::cuda_aware_mpi());
  context.emplace_back("hdf5", hdf5_version());
  context.emplace_back("kokkos", kokkos_version());
  context.emplace_back("blas", trimmed(openblas_get_config()));
  context.emplace_back("blas_threading", blas_threading());
  context.emplace_back("blas_library", std::string(SB_BLAS_LIBRARY));
  context.emplace_back("onednn", onednn_version());
  context.emplace_back("cpu_isa", onednn_cpu_isa());
  context.emplace_back("conv2d_fp32", conv2d_implementation("fp32"));
  context.emplace_back("conv2d_bf16", conv2d_implementation("bf16"));
  context.emplace_back("matmul_bf16", matmul_implementation("bf16"));
  context.emplace_back("matmul_fp16", matmul_implementation("fp16"));
  context.emplace_back("int8_matmul", int8_matmul_implementation());
  context.emplace_back("fp16_convert", fp16_conversion_implementation());
  context.emplace_back("compiler", std::string(SB_COMPILER));
  context.emplace_back("build_type", std::string(SB_BUILD_TYPE));
  context.emplace_back("git_sha", std::string(SB_GIT_SHA));
  // What Kokkos would warn about (its warnings are off): OpenMP's binding as this process read it.
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES"}) {
    const char* value = std::getenv(name);
    std::string key = name;
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    context.emplace_back(key, std::string(value && *value ? value : "unset"));
  }
  return context;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace sb::metrics
