// SPDX-License-Identifier: Apache-2.0
// The thread count's precedence, and the node-wide sums of masks and threads (MPI).
#include "train/thread_allocation.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/check.hpp"
#include "core/cpu_affinity.hpp"

namespace sb::train {

namespace {

// A positive integer from the environment, 0 when unset or not one.
int positive_from_environment(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);  // OMP_NUM_THREADS may be a list: "8,4"
  return end != text && value > 0 && value < 1 << 20 ? static_cast<int>(value) : 0;
}

// Threads from the configuration or environment; 0 and source "affinity" when none says.
int stated_threads(std::int64_t configured, int cpus, std::string& source) {
  if (configured > 0) return source = "config", static_cast<int>(configured);
  if (const int omp = positive_from_environment("OMP_NUM_THREADS"); omp > 0) return source = "OMP_NUM_THREADS", omp;
  if (const int slurm = positive_from_environment("SLURM_CPUS_PER_TASK"); slurm > 0)
    return source = "SLURM_CPUS_PER_TASK", std::min(slurm, cpus);
  source = "affinity";
  return 0;
}

// A stated count is at most the host's CPUs: more cannot run one per core, and Kokkos's OpenMP
// start-up crashed at 50000.
void check_within_host(int threads, const std::string& source, const std::string& config_source) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= cpus) return;
  if (source == "config")
    SB_USER_CHECK(false, "{}: 'threads' is {}, more than the {} CPUs of host {}; use at most {} (0: all)",
                  config_source, threads, cpus, host_name(), cpus);
  SB_USER_CHECK(false, "{} is {}, more than the {} CPUs of host {}; use at most {}", source, threads, cpus,
                host_name(), cpus);
}

MPI_Comm node_communicator(MPI_Comm world) {
  MPI_Comm node = MPI_COMM_NULL;
  SB_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS,
           "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  return node;
}

}  // namespace

ThreadAllocation allocate_threads(std::int64_t configured_threads, const std::string& config_source, MPI_Comm world) {
  ThreadAllocation a;
  const cpu_set_t& mine = start_affinity();
  a.cpus_allowed = start_cpu_count();
  a.cpus_allowed_list = cpu_list(mine);
  a.threads = stated_threads(configured_threads, a.cpus_allowed, a.source);
  check_within_host(a.threads, a.source, config_source);
  MPI_Comm node = node_communicator(world);
  MPI_Comm_size(node, &a.node_ranks);
  cpu_set_t all = mine;  // cpu_set_t is a plain bit array: OR them byte by byte
  MPI_Allreduce(MPI_IN_PLACE, &all, static_cast<int>(sizeof all), MPI_BYTE, MPI_BOR, node);
  a.node_cpus = std::max(1, CPU_COUNT(&all));
  if (a.threads == 0) {
    // identical masks: the union is no larger than mine, and the node's ranks share it
    const bool shared = a.node_cpus == a.cpus_allowed;
    a.threads = std::max(1, shared ? a.cpus_allowed / a.node_ranks : a.cpus_allowed);
  }
  int node_threads = 0, over = 0;
  MPI_Allreduce(&a.threads, &node_threads, 1, MPI_INT, MPI_SUM, node);
  const int node_over = node_threads > a.node_cpus ? 1 : 0;
  MPI_Allreduce(&node_over, &over, 1, MPI_INT, MPI_MAX, world);
  a.oversubscribed = over != 0;
  MPI_Comm_free(&node);
  return a;
}

io::Attributes thread_allocation_context(const ThreadAllocation& a) {
  return {{"threads_source", a.source},
          {"cpus_allowed", static_cast<std::int64_t>(a.cpus_allowed)},
          {"cpus_allowed_list", a.cpus_allowed_list},
          {"node_ranks", static_cast<std::int64_t>(a.node_ranks)},
          {"node_cpus", static_cast<std::int64_t>(a.node_cpus)},
          {"oversubscribed", static_cast<std::int64_t>(a.oversubscribed ? 1 : 0)}};
}

std::string name_saying_oversubscription(const std::string& id, const ThreadAllocation& a) {
  if (!a.oversubscribed || id.find("oversubscribed") != std::string::npos) return id;
  return id + "-oversubscribed";
}

}  // namespace sb::train
