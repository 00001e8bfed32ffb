// SPDX-License-Identifier: Apache-2.0
// Writes the HDF5 result file (schema version 1, layout in shared/DESIGN.md and
// results/README.md): one ResultsFile per file, one RunWriter per run. Leaves out reading
// (results_reader.hpp) and parallel writes: only rank 0 opens the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>

#include "io/attr_value.hpp"
#include "io/h5_check.hpp"

namespace sb::io {

inline constexpr std::int64_t kSchemaVersion = 1;
inline constexpr double kNotApplicable = std::numeric_limits<double>::quiet_NaN();

// The caller's attributes of /runs/<id>, in the order they are to be stored.
using RunAttributes = Attributes;

// One row of /runs/<id>/steps. Field names and order are the schema; see results/README.md
// for units. Times are rank 0's view of the step; samples, tokens and flops the whole step.
struct StepRow {
  std::int64_t step = 0;
  double loss = kNotApplicable;
  double lr = 0.0;
  double grad_norm = kNotApplicable;
  double loss_scale = 1.0;
  double step_time_s = 0.0;
  double compute_s = 0.0;
  double comm_s = 0.0;
  double bubble_s = 0.0;
  double optimizer_s = 0.0;
  std::int64_t samples = 0;
  std::int64_t tokens = 0;
  double flops = 0.0;
};

// One row of /runs/<id>/eval. split is "train", "heldout" or "test".
struct EvalRow {
  std::int64_t step = 0;
  std::string split;
  double loss = kNotApplicable;
  double accuracy = kNotApplicable;  // NaN when the task has no accuracy
};

// One row of /runs/<id>/memory: per-category peak bytes on one rank, the peak of their sum
// (peak_tracked, not the sum of peaks) and the process's peak resident set size.
struct MemoryRow {
  std::int64_t rank = 0;
  std::int64_t params = 0;
  std::int64_t grads = 0;
  std::int64_t optimizer = 0;
  std::int64_t activations = 0;
  std::int64_t workspace = 0;
  std::int64_t comm = 0;
  std::int64_t peak_tracked = 0;
  std::int64_t peak_rss = 0;
};

// One row of /runs/<id>/ranks: a rank's grid coordinates and its mean time per step.
struct RankRow {
  std::int64_t rank = 0;
  std::int64_t dp_rank = 0;
  std::int64_t tp_rank = 0;
  std::int64_t pp_rank = 0;
  double step_time_s = 0.0;
  double compute_s = 0.0;
  double comm_s = 0.0;
  double bubble_s = 0.0;
  double idle_s = 0.0;
};

// One row of /runs/<id>/timeline: where one rank's time in one step went. compute_s is its
// forward, backward and pipeline-stage work; tp_comm_s its tensor-parallel all-reduces;
// p2p_s the pipeline's point-to-point transfers it waited for beyond the bubble; bubble_s the
// pipeline's fill and drain (waiting with nothing to compute); dp_comm_s the exposed
// data-parallel exchange and loss all-reduce; optimizer_s clipping and the update.
struct TimelineRow {
  std::int64_t step = 0;
  std::int64_t rank = 0;
  double step_time_s = 0.0;
  double compute_s = 0.0;
  double tp_comm_s = 0.0;
  double p2p_s = 0.0;
  double bubble_s = 0.0;
  double dp_comm_s = 0.0;
  double optimizer_s = 0.0;
  double compute_cpu_s = 0.0;  // compute_s in CPU time, its waits left out (stragglers are judged by it)
};

// One row of /runs/<id>/collectives: one rank at one communication call of a step. The ranks
// of a group (group and group_root) meet at each of its collectives, so the rank that computed
// longest before a call is the one the others waited for there.
inline constexpr std::size_t kCollectiveNameBytes = 16;  // group, collective: null-padded
struct CollectiveRow {
  std::int64_t step = 0;
  std::int64_t rank = 0;
  char group[kCollectiveNameBytes] = {};  // the communicator: dp, tp, pp, mp or world
  std::int64_t group_root = 0;  // the world rank of the group's first rank: which dp (tp, ...) group
  std::int64_t index = 0;       // the call's place among the rank's calls in the group in this step
  char collective[kCollectiveNameBytes] = {};  // all_reduce, reduce_scatter, all_gather, broadcast, send, recv, barrier
  std::int64_t bytes = 0;       // the nccl-tests size of the call
  std::int64_t blocking = 0;    // 1: the rank waited inside the call; 0: issued, waited for later
  double arrive_s = 0;          // the call's issue, from the step's start
  double compute_before_s = 0;  // from the end of the rank's last wait in a call (or the step's start) to the issue
  double wait_s = 0;            // blocked for it: from the call or its first wait to completion; 0: a test found it done
  double seconds = 0;           // from the issue to completion
};

// Writes one run's group. Every row is written through dataset ids kept open here (the file
// is never reopened); append_step flushes, so a killed process leaves every completed step
// readable and status "interrupted". Move-only; outlives its ResultsFile safely (HDF5 keeps
// the file open while any object in it is open).
class RunWriter {
 public:
  RunWriter(RunWriter&&) noexcept = default;
  RunWriter& operator=(RunWriter&&) noexcept = default;
  ~RunWriter() = default;

  const std::string& run_id() const { return run_id_; }

  void append_step(const StepRow& row);  // appends and flushes
  void append_eval(const EvalRow& row);
  // Replace the whole table (one row per rank); an empty span empties it.
  void write_memory(std::span<const MemoryRow> rows);
  void write_ranks(std::span<const RankRow> rows);
  // Appends one step's rows (one per rank); flushed with the next append_step.
  void append_timeline(std::span<const TimelineRow> rows);
  // Replaces the table: every rank's calls in the logged steps.
  void write_collectives(std::span<const CollectiveRow> rows);
  // Create or update the attributes of the group context, summary or prediction.
  void write_context(const Attributes& attributes);
  void write_summary(const Attributes& attributes);
  void write_prediction(const Attributes& attributes);
  // The group compression: post-training quantisation's figures (train/trainer.cpp names them).
  void write_compression(const Attributes& attributes);
  void flush();
  // status is ok, failed or interrupted; sets error and finished_utc, then flushes.
  void finish(const std::string& status, const std::string& error);

 private:
  friend class ResultsFile;
  RunWriter(std::string run_id, H5Handle group);
  void write_group_attributes(const char* group_name, const Attributes& attributes);

  std::string run_id_;
  H5Handle group_;
  H5Handle steps_, eval_, memory_, ranks_, timeline_, collectives_;  // datasets
  // in-memory compound types
  H5Handle step_type_, eval_type_, memory_type_, rank_type_, timeline_type_, collective_type_;
  std::int64_t step_rows_ = 0;
  std::int64_t timeline_rows_ = 0;
  std::int64_t eval_rows_ = 0;
};

// A result file opened for writing by one process. Move-only; closes on destruction.
class ResultsFile {
 public:
  // A new file (an existing one is truncated) with root attributes schema_version and
  // generator, and an empty /runs group. UserError when the folder does not exist.
  static ResultsFile create(const std::filesystem::path& path);
  // Opens an existing scalebench file to add runs, or creates it. UserError when the file is
  // not HDF5, not a scalebench result file, or of another schema version.
  static ResultsFile open_or_create(const std::filesystem::path& path);

  // Creates /runs/<run_id> with the caller's attributes (every name in
  // required_run_attributes(), plus any extra), status "interrupted", error "" and
  // finished_utc "", and the empty tables steps, eval, memory, ranks and timeline.
  // UserError when the id is empty, ".", contains '/', or already exists in the file.
  RunWriter begin_run(std::string run_id, const RunAttributes& attributes);

  const std::filesystem::path& path() const { return path_; }
  void flush();

 private:
  ResultsFile(std::filesystem::path path, H5Handle file);
  std::filesystem::path path_;
  H5Handle file_;
};

// Marks a run that its own process could not finish (it was killed, or its MPI job was taken
// down) as `status` with `error`, unless it already ended: returns false when its status was
// not "interrupted". What `scalebench run` does after a case's job fails.
bool mark_unfinished_run(const std::filesystem::path& path, const std::string& run_id, const std::string& status,
                         const std::string& error);

// Creates or updates the attributes of `group` (an absolute path such as "/runs/<id>" or
// "/repeats/<case>"; missing groups on the way are created) in an existing result file.
void write_group_attributes(const std::filesystem::path& path, const std::string& group, const Attributes& attributes);

// The run attributes the caller of begin_run must supply, in schema order.
std::span<const char* const> required_run_attributes();

// "scalebench <version> <git sha>", the generator attribute of files written by this build.
std::string generator_string();

// Opens an existing file (access_flags H5F_ACC_RDONLY or H5F_ACC_RDWR) after checking it is a
// scalebench result file of this schema version; UserError naming the path otherwise.
// Shared by open_or_create and the reader.
H5Handle open_existing_results_file(const std::filesystem::path& path, unsigned access_flags);

}  // namespace sb::io
