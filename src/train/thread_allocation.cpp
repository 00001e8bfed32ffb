// SPDX-License-Identifier: Apache-2.0
// The thread count's precedence, and the node-wide sums of masks and threads (MPI).
#include "train/thread_allocation.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "core/check.hpp"
#include "core/cpu_affinity.hpp"
#include "core/environment.hpp"

namespace sb::train {

namespace {

// A thread count from the environment, 0 when unset. OMP_NUM_THREADS may be a list ("8,4":
// per nesting level): its first item. A value that is no count is refused, not ignored: the
// user meant something by it.
int positive_from_environment(const char* name) {
  const std::optional<std::string> text = environment_text(name);
  if (!text) return 0;
  constexpr std::int64_t kMostThreads = 1 << 20;
  const std::optional<std::int64_t> value = parse_bounded_integer(text->substr(0, text->find(',')), 1, kMostThreads);
  SB_USER_CHECK(value.has_value(), "environment variable {} is '{}' but must be a thread count from 1 to {}{}; unset it "
                "or give one", name, text->substr(0, 40), kMostThreads,
                std::string(name) == "OMP_NUM_THREADS" ? " (or a list such as 8,4)" : "");
  return static_cast<int>(*value);
}

}  // namespace

void check_thread_environment() {
  positive_from_environment("OMP_NUM_THREADS");
  positive_from_environment("SLURM_CPUS_PER_TASK");
}

namespace {

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
