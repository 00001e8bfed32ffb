// SPDX-License-Identifier: Apache-2.0
// `scalebench train` with strategy.recompute none, selective and full: the tracked memory the
// HDF5 file records per category equals the prediction made before the run (the cost model lays
// out the trainer's own slots and recompute scratch), and each mode keeps less than the last.
// Read through the HDF5 file, never stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

constexpr double kClosurePct = 5.0;
const std::vector<std::string> kCategories = {"params", "grads", "optimizer", "activations"};

// Trains `extra` on gpt-nano (or `model`) for 2 steps and returns the tracked bytes per category of the rank
// the prediction describes (the most loaded one), after checking each against the prediction.
const std::string kGptNano = "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 8}\n";
const std::string kResnetMini = "model: resnet-mini\ndata: {dataset: mnist}\nbatch: {global: 16}\n";

std::map<std::string, double> trained_memory(const Scratch& scratch, const std::string& name, const std::string& extra,
                                             int ranks, const std::string& model = kGptNano) {
  const auto config = scratch.write(name + ".yaml", model + "steps: 2\neval_batches: 1\nthreads: 1\n" + extra);
  const auto out = scratch.path(name + ".h5");
  const std::string args = "train --config " + config.string() + " --out " + out.string();
  const CommandResult r = ranks == 1 ? scratch.run(args)
                                     : scratch.run_under(std::string(SB_MPIEXEC) + " --oversubscribe -np " +
                                                             std::to_string(ranks), args);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  if (r.exit_code != 0) return {};
  const std::string run = "/runs/" + io::list_runs(out).front();
  // the rank holding the most: what the prediction's memory describes
  std::vector<double> total(static_cast<std::size_t>(ranks), 0.0);
  for (const std::string& category : kCategories) {
    const auto column = io::read_column(out, run + "/memory", category);
    for (std::size_t q = 0; q < total.size(); ++q) total[q] += column[q];
  }
  const std::size_t heaviest = static_cast<std::size_t>(std::max_element(total.begin(), total.end()) - total.begin());
  std::map<std::string, double> measured;
  for (const std::string& category : kCategories) {
    measured[category] = io::read_column(out, run + "/memory", category)[heaviest];
    const double predicted = io::read_number_attribute(out, run + "/prediction", "memory_" + category);
    EXPECT_NEAR(predicted, measured[category], kClosurePct / 100 * measured[category])
        << name << " " << category << ": predicted " << predicted << " B, tracked " << measured[category] << " B";
  }
  return measured;
}

TEST(RecomputeMemory, PredictionEqualsTrackedMemoryAndEachModeKeepsLess) {
  Scratch scratch;
  std::map<std::string, double> activations;
  for (const std::string mode : {"none", "selective", "full"})
    activations[mode] = trained_memory(scratch, mode, "strategy: {recompute: " + mode + "}\n", 1)["activations"];
  EXPECT_LT(activations["full"], activations["selective"]);
  EXPECT_LT(activations["selective"], activations["none"]);
}

TEST(RecomputeMemory, PredictionEqualsTrackedMemoryOnATensorAndPipelineGrid) {
  Scratch scratch;
  std::map<std::string, double> activations;
  for (const std::string mode : {"selective", "full"})
    activations[mode] = trained_memory(scratch, mode,
                                       "strategy: {tp: 2, pp: 2, micro_batches: 4, recompute: " + mode + "}\n",
                                       4)["activations"];
  EXPECT_LT(activations["full"], activations["selective"]);
}

// The ResNet recomputes whole blocks (full); selective, which drops attention, is refused by
// train and predict alike with one sentence, before any file is written.
TEST(RecomputeMemory, ResnetFullRecomputationKeepsLessAsPredicted) {
  Scratch scratch;
  const double none = trained_memory(scratch, "resnet_none", "", 1, kResnetMini)["activations"];
  const double full =
      trained_memory(scratch, "resnet_full", "strategy: {recompute: full}\n", 1, kResnetMini)["activations"];
  EXPECT_LT(full, 0.6 * none);
  const auto config = scratch.write("resnet_selective.yaml", kResnetMini + "steps: 2\nstrategy: {recompute: selective}\n");
  const auto out = scratch.path("resnet_selective.h5");
  for (const std::string command : {"train --config " + config.string() + " --out " + out.string(),
                                    "predict --config " + config.string() + " --site this-machine"}) {
    const CommandResult r = scratch.run(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.stderr_text.find("strategy.recompute selective recomputes attention, which model resnet-mini (a "
                                 "ResNet) has none of"),
              std::string::npos)
        << r.stderr_text;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace sb::testing
