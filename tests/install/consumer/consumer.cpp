// SPDX-License-Identifier: Apache-2.0
// Resolves a two-stage pipeline case with the installed scalebench and prints its plan: what a
// tool built on the library (a site's planner, a sweep generator) would call.
#include <cstdio>

#include "plan/config.hpp"
#include "plan/run_plan.hpp"

int main() {
  const char* text =
      "model: gpt-nano\ndata: sotu\nbatch: {global: 16}\nsteps: 1\n"
      "strategy: {dp: 2, pp: 2, micro_batches: 4}\n";
  const sb::plan::TrainConfig config =
      sb::plan::parse_train_config(sb::plan::parse_yaml_text(text, "consumer"), "consumer");
  const sb::plan::RunPlan plan = sb::plan::runnable_plan(config);
  std::printf("world %lld local_batch %lld micro_batch %lld stages %zu\n", static_cast<long long>(plan.world_size),
              static_cast<long long>(plan.local_batch), static_cast<long long>(plan.micro_batch), plan.stages.size());
  return 0;
}
