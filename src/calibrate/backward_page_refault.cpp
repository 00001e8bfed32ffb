// SPDX-License-Identifier: Apache-2.0
// The gradient pages' refault timed inside a backward (see backward_page_refault.hpp).
#include "calibrate/backward_page_refault.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/statistics.hpp"
#include "models/gpt/gpt.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::calibrate {

namespace {

using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

template <class S>
BackwardPageRefault measure(i64 batch, int passes) {
  SB_CHECK(batch >= 1 && passes >= 1, "backward page refault: batch {}, {} passes", batch, passes);
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-tiny");
  const i64 T = g.max_seq_len;
  gpt::GptPartition partition;
  partition.gradient_residency = Residency::resident_pages;
  MemoryTracker tracker;
  gpt::GptModelT<S> model(g, batch, T, kernels::Backend::cpu, tracker, partition);
  model.init_weights(1);
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(g.vocab - 1));
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch * T)), targets(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = token(rng), targets[i] = token(rng);
  TrackedBuffer& gradients = model.gradient_memory();
  const auto backward_seconds = [&](bool give_back) {
    model.forward_stage(0, tokens.data(), nullptr, targets.data(), batch, T);
    Kokkos::fence();
    const Clock::time_point start = Clock::now();
    if (give_back) gradients.discard(0, gradients.bytes());
    model.backward_stage(0, nullptr);
    Kokkos::fence();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  backward_seconds(false);  // warm-up: pages touched, threads awake
  std::vector<double> resident, given_back;
  for (int pass = 0; pass < passes; ++pass) {
    resident.push_back(backward_seconds(false));
    given_back.push_back(backward_seconds(true));
  }
  BackwardPageRefault r;
  r.resident_backward_s = median(resident);
  r.given_back_backward_s = median(given_back);
  r.gradient_bytes = gradients.bytes();
  r.passes = passes;
  r.seconds_per_byte = std::max(0.0, r.given_back_backward_s - r.resident_backward_s) /
                       static_cast<double>(r.gradient_bytes);
  return r;
}

}  // namespace

BackwardPageRefault measure_backward_page_refault(const std::string& precision, i64 batch, int passes) {
  if (precision == "fp32") return measure<float>(batch, passes);
  if (precision == "bf16") return measure<bf16>(batch, passes);
  if (precision == "fp16") return measure<fp16>(batch, passes);
  SB_USER_CHECK(false, "calibrate: unknown precision '{}' (fp32, bf16, fp16)", precision);
  return {};
}

}  // namespace sb::calibrate
