// SPDX-License-Identifier: Apache-2.0
// The per-page cost of madvise(MADV_DONTNEED) and the first read and write after it.
#include "calibrate/page_refault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/check.hpp"

namespace sb::calibrate {

PageRefault measure_page_refault(std::int64_t bytes, int rounds) {
  SB_CHECK(bytes > 0 && rounds >= 1, "page refault timing over {} bytes, {} rounds", bytes, rounds);
  const auto page = static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
  const std::int64_t pages = (bytes + page - 1) / page;
  const auto length = static_cast<std::size_t>(pages * page);
  void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  SB_CHECK(mapped != MAP_FAILED, "calibrate: mmap of {} bytes failed: {}", length, std::strerror(errno));
  auto* base = static_cast<volatile char*>(mapped);
  for (std::int64_t p = 0; p < pages; ++p) base[p * page] = 1;  // resident before the first round
  std::vector<double> seconds;
  for (int round = 0; round < rounds; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    const int advised = madvise(mapped, length, MADV_DONTNEED);
    // backward adds into its gradients: the read faults in the shared zero page, the write then
    // faults again for a page of its own (about twice a write alone on a 2-vCPU KVM guest)
    for (std::int64_t p = 0; p < pages; ++p) base[p * page] = static_cast<char>(base[p * page] + round + 2);
    const auto t1 = std::chrono::steady_clock::now();
    SB_CHECK(advised == 0, "calibrate: madvise(MADV_DONTNEED) failed: {}", std::strerror(errno));
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  munmap(mapped, length);
  std::nth_element(seconds.begin(), seconds.begin() + rounds / 2, seconds.end());
  return {seconds[static_cast<std::size_t>(rounds / 2)] / static_cast<double>(pages), page, pages, rounds};
}

}  // namespace sb::calibrate
