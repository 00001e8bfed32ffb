// SPDX-License-Identifier: Apache-2.0
// A small, fully specified run (attributes and rows) shared by the io tests and the example
// writer, so every test writes the same schema. Leaves out realistic values: only distinct ones.
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "io/results_file.hpp"

namespace sb::io::testing {

inline Attributes example_run_attributes(const std::string& model = "gpt-nano") {
  return {{"config_yaml", std::string("model: gpt-nano\nsteps: 3\n")},
          {"model", model},
          {"dataset", std::string("state_of_the_union")},
          {"device", std::string("cpu")},
          {"precision", std::string("fp32")},
          {"dp", std::int64_t{2}},
          {"tp", std::int64_t{1}},
          {"pp", std::int64_t{1}},
          {"micro_batches", std::int64_t{1}},
          {"schedule", std::string("1f1b")},
          {"zero", std::int64_t{0}},
          {"world_size", std::int64_t{2}},
          {"global_batch", std::int64_t{8}},
          {"seq_len", std::int64_t{64}},
          {"started_utc", std::string("2026-11-29T12:00:00Z")},
          {"git_sha", std::string("0123456789ab")}};
}

inline StepRow example_step(std::int64_t step) {
  const double s = static_cast<double>(step);
  return StepRow{.step = step, .loss = 5.5 - 0.25 * s, .lr = 1e-3 * (s + 1),
                 .grad_norm = 1.5 + s, .loss_scale = 1.0, .step_time_s = 0.010 + 0.001 * s,
                 .compute_s = 0.007, .comm_s = 0.002, .bubble_s = 0.0, .optimizer_s = 0.0005,
                 .samples = 8, .tokens = 512, .flops = 3.25e9 + s};
}

inline std::vector<EvalRow> example_evals() {
  return {{1, "train", 5.0, kNotApplicable}, {1, "heldout", 5.1, 0.125},
          {2, "heldout", 4.9, 0.25}, {2, "test", 4.95, 0.5}};
}

inline std::vector<MemoryRow> example_memory() {
  return {{0, 1 << 20, 1 << 20, 2 << 20, 3 << 20, 4096, 8192, 7 << 20, 100 << 20},
          {1, 1 << 20, 1 << 20, 2 << 20, 5 << 20, 4096, 8192, 9 << 20, 110 << 20}};
}

inline std::vector<RankRow> example_ranks() {
  return {{0, 0, 0, 0, 0.012, 0.008, 0.002, 0.0, 0.001},
          {1, 1, 0, 0, 0.013, 0.009, 0.003, 0.0, 0.0005}};
}

// Two steps of two ranks, appended one step at a time.
inline std::vector<TimelineRow> example_timeline() {
  return {{1, 0, 0.012, 0.006, 0.001, 0.0015, 0.002, 0.0005, 0.001, 0.0058},
          {1, 1, 0.012, 0.007, 0.001, 0.0005, 0.0025, 0.0, 0.001, 0.0069},
          {2, 0, 0.011, 0.006, 0.0011, 0.001, 0.0018, 0.0004, 0.0007, 0.0059},
          {2, 1, 0.011, 0.0065, 0.001, 0.0004, 0.0022, 0.0002, 0.0007, 0.0064}};
}

// One step of two ranks' calls: the gradient all-reduce (rank 1 arrived last), then the loss's.
inline std::vector<CollectiveRow> example_collectives() {
  std::vector<CollectiveRow> rows = {
      {2, 0, "dp", 0, 0, "all_reduce", 4096, 0, 0.0051, 0.0051, 0.0013, 0.0014},
      {2, 1, "dp", 0, 0, "all_reduce", 4096, 0, 0.0063, 0.0063, 0.0001, 0.0002},
      {2, 0, "dp", 0, 1, "all_reduce", 8, 1, 0.0068, 0.0003, 0.00002, 0.00002},
      {2, 1, "dp", 0, 1, "all_reduce", 8, 1, 0.0067, 0.0002, 0.00003, 0.00003}};
  return rows;
}

// A file path under the temp folder, unique per process, removed when the test ends.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name) {
    const auto folder = std::filesystem::temp_directory_path() / "scalebench_io_tests";
    std::filesystem::create_directories(folder);
    path_ = folder / (name + "_" + std::to_string(::getpid()) + ".h5");
    std::filesystem::remove(path_);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace sb::io::testing
