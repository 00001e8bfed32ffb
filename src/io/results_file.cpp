// SPDX-License-Identifier: Apache-2.0
// Writer of the schema-1 result file: root attributes, run groups, appendable compound tables.
// Leaves out SWMR (it forbids new attributes after the run starts); a flush per step suffices.
#include "io/results_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/bounded_file.hpp"
#include "io/heap_check.hpp"
#include "io/h5_check.hpp"
#include "io/h5_file_close.hpp"
#include "io/h5_objects.hpp"
#include "metrics/run_context.hpp"
#include "sb_git_revision.hpp"  // SB_GIT_SHA, SB_GIT_DESCRIBE: the commit that built this

#ifndef SB_VERSION
#define SB_VERSION "0.1.0"  // the CMake project version, until the build passes SB_VERSION
#endif

namespace sb::io {

namespace {

constexpr hsize_t kRowsPerChunk = 256;
constexpr std::size_t kTextBytes = 16;  // eval.split, collectives.group: fixed-length, null-padded
static_assert(kTextBytes == kCollectiveNameBytes);

// What each table field is, in memory and in the file (little-endian, packed).
enum class FieldKind { int64, float64, text16 };
struct Field {
  const char* name;
  FieldKind kind;
  std::size_t offset;  // in the in-memory row struct
};
#define SB_FIELD(Row, member, kind) Field{#member, FieldKind::kind, offsetof(Row, member)}

// The in-memory form of an eval row: a fixed-size record HDF5 can copy.
struct EvalRecord {
  std::int64_t step;
  char split[kTextBytes];
  double loss;
  double accuracy;
};

static_assert(std::is_standard_layout_v<StepRow> && std::is_standard_layout_v<MemoryRow> &&
              std::is_standard_layout_v<RankRow> && std::is_standard_layout_v<EvalRecord> &&
              std::is_standard_layout_v<TimelineRow> && std::is_standard_layout_v<CollectiveRow>);

constexpr std::array kStepFields = {
    SB_FIELD(StepRow, step, int64),          SB_FIELD(StepRow, loss, float64),
    SB_FIELD(StepRow, lr, float64),          SB_FIELD(StepRow, grad_norm, float64),
    SB_FIELD(StepRow, loss_scale, float64),  SB_FIELD(StepRow, step_time_s, float64),
    SB_FIELD(StepRow, compute_s, float64),   SB_FIELD(StepRow, comm_s, float64),
    SB_FIELD(StepRow, bubble_s, float64),    SB_FIELD(StepRow, optimizer_s, float64),
    SB_FIELD(StepRow, samples, int64),       SB_FIELD(StepRow, tokens, int64),
    SB_FIELD(StepRow, flops, float64)};
constexpr std::array kEvalFields = {
    SB_FIELD(EvalRecord, step, int64), SB_FIELD(EvalRecord, split, text16),
    SB_FIELD(EvalRecord, loss, float64), SB_FIELD(EvalRecord, accuracy, float64)};
constexpr std::array kMemoryFields = {
    SB_FIELD(MemoryRow, rank, int64),         SB_FIELD(MemoryRow, params, int64),
    SB_FIELD(MemoryRow, grads, int64),        SB_FIELD(MemoryRow, optimizer, int64),
    SB_FIELD(MemoryRow, activations, int64),  SB_FIELD(MemoryRow, workspace, int64),
    SB_FIELD(MemoryRow, comm, int64),         SB_FIELD(MemoryRow, peak_tracked, int64),
    SB_FIELD(MemoryRow, peak_rss, int64)};
constexpr std::array kRankFields = {
    SB_FIELD(RankRow, rank, int64),          SB_FIELD(RankRow, dp_rank, int64),
    SB_FIELD(RankRow, tp_rank, int64),       SB_FIELD(RankRow, pp_rank, int64),
    SB_FIELD(RankRow, step_time_s, float64), SB_FIELD(RankRow, compute_s, float64),
    SB_FIELD(RankRow, comm_s, float64),      SB_FIELD(RankRow, bubble_s, float64),
    SB_FIELD(RankRow, idle_s, float64)};
constexpr std::array kTimelineFields = {
    SB_FIELD(TimelineRow, step, int64),          SB_FIELD(TimelineRow, rank, int64),
    SB_FIELD(TimelineRow, step_time_s, float64), SB_FIELD(TimelineRow, compute_s, float64),
    SB_FIELD(TimelineRow, tp_comm_s, float64),   SB_FIELD(TimelineRow, p2p_s, float64),
    SB_FIELD(TimelineRow, bubble_s, float64),    SB_FIELD(TimelineRow, dp_comm_s, float64),
    SB_FIELD(TimelineRow, optimizer_s, float64), SB_FIELD(TimelineRow, compute_cpu_s, float64)};
constexpr std::array kCollectiveFields = {
    SB_FIELD(CollectiveRow, step, int64),         SB_FIELD(CollectiveRow, rank, int64),
    SB_FIELD(CollectiveRow, group, text16),       SB_FIELD(CollectiveRow, group_root, int64),
    SB_FIELD(CollectiveRow, index, int64),        SB_FIELD(CollectiveRow, collective, text16),
    SB_FIELD(CollectiveRow, bytes, int64),        SB_FIELD(CollectiveRow, blocking, int64),
    SB_FIELD(CollectiveRow, arrive_s, float64),   SB_FIELD(CollectiveRow, compute_before_s, float64),
    SB_FIELD(CollectiveRow, wait_s, float64),     SB_FIELD(CollectiveRow, seconds, float64)};
#undef SB_FIELD

H5Handle text_type() {
  H5Handle type{SB_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose};
  SB_H5_CHECK(H5Tset_size(type.get(), kTextBytes));
  SB_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  return type;
}

// in_file: packed little-endian layout for the file; otherwise native types at the row
// struct's offsets, for reading rows straight out of the caller's structs.
template <std::size_t N>
H5Handle compound_type(const std::array<Field, N>& fields, std::size_t row_bytes, bool in_file) {
  const H5Handle text = text_type();
  const auto bytes = [](FieldKind kind) { return kind == FieldKind::text16 ? kTextBytes : 8; };
  std::size_t packed_bytes = 0;
  for (const Field& field : fields) packed_bytes += bytes(field.kind);
  H5Handle type{SB_H5_CHECK(H5Tcreate(H5T_COMPOUND, in_file ? packed_bytes : row_bytes)),
                H5Tclose};
  std::size_t packed_offset = 0;
  for (const Field& field : fields) {
    hid_t member = text.get();
    if (field.kind == FieldKind::int64) member = in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64;
    if (field.kind == FieldKind::float64) member = in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
    SB_H5_CHECK(H5Tinsert(type.get(), field.name, in_file ? packed_offset : field.offset, member));
    packed_offset += bytes(field.kind);
  }
  return type;
}

// An empty one-dimensional table, chunked and unlimited so rows can be appended.
H5Handle create_table(hid_t group, const char* name, hid_t file_type) {
  const hsize_t initial = 0, unlimited = H5S_UNLIMITED;
  H5Handle space{SB_H5_CHECK(H5Screate_simple(1, &initial, &unlimited)), H5Sclose};
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_chunk(creation.get(), 1, &kRowsPerChunk));
  return H5Handle{SB_H5_CHECK(H5Dcreate2(group, name, file_type, space.get(), H5P_DEFAULT,
                                         creation.get(), H5P_DEFAULT)),
                  H5Dclose};
}

// Sets the table's length to first_row + count and writes rows [first_row, first_row+count).
void write_rows(hid_t table, hid_t memory_type, std::int64_t first_row, std::size_t count,
                const void* rows) {
  const hsize_t start = static_cast<hsize_t>(first_row), length = count;
  const hsize_t new_size = start + length;
  SB_H5_CHECK(H5Dset_extent(table, &new_size));
  if (count == 0) return;
  H5Handle file_space{SB_H5_CHECK(H5Dget_space(table)), H5Sclose};
  SB_H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &length,
                                  nullptr));
  H5Handle memory_space{SB_H5_CHECK(H5Screate_simple(1, &length, nullptr)), H5Sclose};
  SB_H5_CHECK(H5Dwrite(table, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT,
                       rows));
}

// Low bound "earliest" keeps superblock version 0: the version-3 superblock that the 1.10
// bounds would select marks the file "open for write" and a killed writer would leave it
// unreadable until h5clear. High bound 1.8 keeps files readable by any HDF5 since 1.8.
H5Handle file_access_list() {
  H5Handle access{SB_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose};
  SB_H5_CHECK(H5Pset_libver_bounds(access.get(), H5F_LIBVER_EARLIEST, H5F_LIBVER_V18));
  return access;
}

// libhdf5 sizes its group B-tree nodes from the version 0 and 1 superblock's K values (two bytes
// each, 4, 16 and 32 by default) and allocates such nodes over and over while it walks a damaged
// file: a 51-byte file claiming a leaf K of 64,774 made it churn through gigabytes (found by
// fuzz_results_reader). A scalebench result file keeps the defaults, so K values above this are
// refused before the library reads them.
constexpr unsigned kLargestBtreeK = 1024;

// The superblock's K values where the HDF5 signature starts it (offset 0 or a power of two from
// 512: a user block), for versions 0 and 1; UserError naming the value when one is out of range.
void check_superblock_btree_sizes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  const std::uintmax_t size = std::filesystem::file_size(path);
  for (std::uintmax_t at = 0; at + 24 <= size; at = at == 0 ? 512 : 2 * at) {
    unsigned char block[24] = {};
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(reinterpret_cast<char*>(block), sizeof block)) return;
    if (!std::equal(std::begin(kSignature), std::end(kSignature), block)) continue;
    if (block[8] > 1) return;  // versions 2 and 3 hold no K values
    const auto k_at = [&](int offset) { return static_cast<unsigned>(block[offset] | (block[offset + 1] << 8)); };
    const unsigned leaf = k_at(16), internal = k_at(18);
    for (const auto& [name, k] : {std::pair{"group leaf node K", leaf}, std::pair{"group internal node K", internal}})
      if (k == 0 || k > kLargestBtreeK)
        throw UserError(fmt::format("{} is not a scalebench result file: its HDF5 superblock's {} is {} (scalebench "
                                    "writes libhdf5's defaults; 1 to {} is accepted)",
                                    path.string(), name, k, kLargestBtreeK));
    return;
  }
}

constexpr std::array<const char*, 16> kRequiredRunAttributeNames = {
    "config_yaml", "model",      "dataset", "device",       "precision",    "dp",
    "tp",          "pp",         "micro_batches", "schedule", "zero",       "world_size",
    "global_batch", "seq_len",   "started_utc",   "git_sha"};
constexpr std::array<std::string_view, 8> kIntegerRunAttributes = {
    "dp", "tp", "pp", "micro_batches", "zero", "world_size", "global_batch", "seq_len"};
constexpr std::array kWriterOwnedAttributes = {"status", "error", "finished_utc"};

// The caller's attributes must hold every required name with its type; the writer's own
// names are refused so the status protocol cannot be bypassed.
void check_run_attributes(const RunAttributes& attributes) {
  for (const char* required : kRequiredRunAttributeNames) {
    const auto found = std::find_if(attributes.begin(), attributes.end(),
                                    [&](const auto& a) { return a.first == required; });
    SB_CHECK(found != attributes.end(), "run attribute '{}' is missing", required);
    const bool integer = std::find(kIntegerRunAttributes.begin(), kIntegerRunAttributes.end(),
                                   required) != kIntegerRunAttributes.end();
    const bool type_ok = integer ? std::holds_alternative<std::int64_t>(found->second)
                                 : std::holds_alternative<std::string>(found->second);
    SB_CHECK(type_ok, "run attribute '{}' must be {}", required,
             integer ? "an integer" : "a string");
  }
  for (const auto& [name, value] : attributes) {
    for (const char* owned : kWriterOwnedAttributes) {
      SB_CHECK(name != owned, "run attribute '{}' is set by RunWriter, not by the caller", name);
    }
  }
}

}  // namespace

std::span<const char* const> required_run_attributes() { return kRequiredRunAttributeNames; }

std::string generator_string() { return fmt::format("scalebench {} {}", SB_VERSION, SB_GIT_SHA); }

H5Handle open_existing_results_file(const std::filesystem::path& path, unsigned access_flags) {
  H5QuietErrors quiet;
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) {
    throw UserError(fmt::format("{} does not exist", path.string()));
  }
  require_regular_file(path, "result file");  // H5Fopen on a FIFO would block
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw UserError(fmt::format("{} is not an HDF5 file (so not a scalebench result file)",
                                path.string()));
  }
  check_superblock_btree_sizes(path);
  check_heaps(path);  // before H5Fopen loads the root group's local heap or anything reads a string
  H5Handle access = file_access_list();
  const hid_t id = H5Fopen(path.c_str(), access_flags, access.get());
  if (id < 0) {
    const std::string reason = h5_error_stack_message();
    throw UserError(fmt::format("cannot open {}: {}{}", path.string(), reason,
                                reason.find("lock") != std::string::npos
                                    ? " (is a run still writing it? HDF5_USE_FILE_LOCKING=FALSE "
                                      "reads it anyway, up to its last flushed step)"
                                    : ""));
  }
  H5Handle file{id, h5_close_file};
  if (!h5_has_attribute(file.get(), "schema_version")) {
    throw UserError(fmt::format("{} is not a scalebench result file (no schema_version attribute)",
                                path.string()));
  }
  const AttrValue version = h5_read_attribute(file.get(), "schema_version");
  if (version != AttrValue{kSchemaVersion}) {
    throw UserError(fmt::format("{} has schema_version {}; this scalebench reads and writes "
                                "version {}",
                                path.string(), to_string(version), kSchemaVersion));
  }
  return file;
}

ResultsFile::ResultsFile(std::filesystem::path path, H5Handle file)
    : path_(std::move(path)), file_(std::move(file)) {}

ResultsFile ResultsFile::create(const std::filesystem::path& path) {
  H5QuietErrors quiet;
  const std::filesystem::path folder = path.parent_path();
  std::error_code ignored;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ignored)) {
    throw UserError(fmt::format("cannot create {}: folder {} does not exist", path.string(),
                                folder.string()));
  }
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_FILE_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_attr_creation_order(creation.get(),
                                         H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  H5Handle access = file_access_list();
  const bool existed = std::filesystem::exists(path, ignored);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, creation.get(), access.get());
  if (id < 0) {
    // a full disk can fail the superblock's write after the file is made: nothing could read it
    if (!existed && std::filesystem::is_regular_file(path, ignored)) std::filesystem::remove(path, ignored);
    throw_h5_create_failure(path, "");
  }
  H5Handle file{id, h5_close_file};
  try {
    h5_write_attribute(file.get(), "schema_version", kSchemaVersion);
    h5_write_attribute(file.get(), "generator", generator_string());
    h5_create_group(file.get(), "runs");
    SB_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  } catch (...) {  // no half-written result file
    file.reset();
    std::filesystem::remove(path, ignored);
    throw;
  }
  return ResultsFile(path, std::move(file));
}

ResultsFile ResultsFile::open_or_create(const std::filesystem::path& path) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) return create(path);
  H5Handle file = open_existing_results_file(path, H5F_ACC_RDWR);
  H5QuietErrors quiet;
  if (!h5_path_exists(file.get(), "runs")) h5_create_group(file.get(), "runs");
  return ResultsFile(path, std::move(file));
}

bool mark_unfinished_run(const std::filesystem::path& path, const std::string& run_id, const std::string& status,
                         const std::string& error) {
  H5Handle file = open_existing_results_file(path, H5F_ACC_RDWR);
  H5QuietErrors quiet;
  const std::string group_path = "runs/" + run_id;
  SB_USER_CHECK(h5_path_exists(file.get(), group_path), "{} holds no run '{}'", path.string(), run_id);
  H5Handle group(H5Gopen2(file.get(), group_path.c_str(), H5P_DEFAULT), H5Gclose);
  SB_H5_CHECK(group.get());
  if (to_string(h5_read_attribute(group.get(), "status")) != "interrupted") return false;
  h5_write_attribute(group.get(), "status", status);
  h5_write_attribute(group.get(), "error", error);
  h5_write_attribute(group.get(), "finished_utc", metrics::utc_now_iso8601());
  SB_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  return true;
}

void write_group_attributes(const std::filesystem::path& path, const std::string& group_path,
                            const Attributes& attributes) {
  SB_CHECK(!group_path.empty() && group_path.front() == '/', "group path '{}' is not absolute", group_path);
  H5Handle file = open_existing_results_file(path, H5F_ACC_RDWR);
  H5QuietErrors quiet;
  H5Handle create_parents(SB_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  SB_H5_CHECK(H5Pset_create_intermediate_group(create_parents.get(), 1));
  H5Handle group(h5_path_exists(file.get(), group_path)
                     ? H5Gopen2(file.get(), group_path.c_str(), H5P_DEFAULT)
                     : H5Gcreate2(file.get(), group_path.c_str(), create_parents.get(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Gclose);
  SB_H5_CHECK(group.get());
  h5_write_attributes(group.get(), attributes);
  SB_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
}

void ResultsFile::flush() {
  H5QuietErrors quiet;
  SB_H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
}

RunWriter ResultsFile::begin_run(std::string run_id, const RunAttributes& attributes) {
  H5QuietErrors quiet;
  if (run_id.empty() || run_id == "." || run_id.find('/') != std::string::npos) {
    throw UserError(fmt::format("run id '{}' is not usable as an HDF5 group name (it must be "
                                "non-empty, not '.', and without '/')",
                                run_id));
  }
  check_run_attributes(attributes);
  H5Handle runs{SB_H5_CHECK(H5Gopen2(file_.get(), "runs", H5P_DEFAULT)), H5Gclose};
  if (SB_H5_CHECK(H5Lexists(runs.get(), run_id.c_str(), H5P_DEFAULT)) > 0) {
    throw UserError(fmt::format("run '{}' already exists in {}; choose another run id or output "
                                "file",
                                run_id, path_.string()));
  }
  try {
    H5Handle group = h5_create_group(runs.get(), run_id);
    h5_write_attributes(group.get(), attributes);
    h5_write_attribute(group.get(), "status", std::string("interrupted"));
    h5_write_attribute(group.get(), "error", std::string());
    h5_write_attribute(group.get(), "finished_utc", std::string());
    RunWriter writer(run_id, std::move(group));
    writer.flush();
    return writer;
  } catch (...) {  // leave no half-made run behind
    H5Ldelete(runs.get(), run_id.c_str(), H5P_DEFAULT);
    throw;
  }
}

RunWriter::RunWriter(std::string run_id, H5Handle group)
    : run_id_(std::move(run_id)), group_(std::move(group)) {
  const hid_t g = group_.get();
  steps_ = create_table(g, "steps", compound_type(kStepFields, 0, true).get());
  eval_ = create_table(g, "eval", compound_type(kEvalFields, 0, true).get());
  memory_ = create_table(g, "memory", compound_type(kMemoryFields, 0, true).get());
  ranks_ = create_table(g, "ranks", compound_type(kRankFields, 0, true).get());
  timeline_ = create_table(g, "timeline", compound_type(kTimelineFields, 0, true).get());
  collectives_ = create_table(g, "collectives", compound_type(kCollectiveFields, 0, true).get());
  step_type_ = compound_type(kStepFields, sizeof(StepRow), false);
  eval_type_ = compound_type(kEvalFields, sizeof(EvalRecord), false);
  memory_type_ = compound_type(kMemoryFields, sizeof(MemoryRow), false);
  rank_type_ = compound_type(kRankFields, sizeof(RankRow), false);
  timeline_type_ = compound_type(kTimelineFields, sizeof(TimelineRow), false);
  collective_type_ = compound_type(kCollectiveFields, sizeof(CollectiveRow), false);
}

void RunWriter::append_step(const StepRow& row) {
  H5QuietErrors quiet;
  write_rows(steps_.get(), step_type_.get(), step_rows_, 1, &row);
  ++step_rows_;
  SB_H5_CHECK(H5Fflush(group_.get(), H5F_SCOPE_GLOBAL));
}

void RunWriter::append_eval(const EvalRow& row) {
  SB_CHECK(row.split == "train" || row.split == "heldout" || row.split == "test",
           "eval split '{}' is not train, heldout or test", row.split);
  H5QuietErrors quiet;
  EvalRecord record{row.step, {}, row.loss, row.accuracy};
  std::memcpy(record.split, row.split.data(), row.split.size());
  write_rows(eval_.get(), eval_type_.get(), eval_rows_, 1, &record);
  ++eval_rows_;
}

void RunWriter::write_memory(std::span<const MemoryRow> rows) {
  H5QuietErrors quiet;
  write_rows(memory_.get(), memory_type_.get(), 0, rows.size(), rows.data());
}

void RunWriter::write_ranks(std::span<const RankRow> rows) {
  H5QuietErrors quiet;
  write_rows(ranks_.get(), rank_type_.get(), 0, rows.size(), rows.data());
}

void RunWriter::append_timeline(std::span<const TimelineRow> rows) {
  H5QuietErrors quiet;
  write_rows(timeline_.get(), timeline_type_.get(), timeline_rows_, rows.size(), rows.data());
  timeline_rows_ += static_cast<std::int64_t>(rows.size());
}

void RunWriter::write_collectives(std::span<const CollectiveRow> rows) {
  H5QuietErrors quiet;
  write_rows(collectives_.get(), collective_type_.get(), 0, rows.size(), rows.data());
}

void RunWriter::write_group_attributes(const char* group_name, const Attributes& attributes) {
  H5QuietErrors quiet;
  H5Handle group = h5_open_or_create_group(group_.get(), group_name);
  h5_write_attributes(group.get(), attributes);
}

void RunWriter::write_context(const Attributes& attributes) {
  write_group_attributes("context", attributes);
}

void RunWriter::write_summary(const Attributes& attributes) {
  write_group_attributes("summary", attributes);
}

void RunWriter::write_prediction(const Attributes& attributes) {
  write_group_attributes("prediction", attributes);
}

void RunWriter::write_compression(const Attributes& attributes) {
  write_group_attributes("compression", attributes);
}

void RunWriter::flush() {
  H5QuietErrors quiet;
  SB_H5_CHECK(H5Fflush(group_.get(), H5F_SCOPE_GLOBAL));
}

void RunWriter::finish(const std::string& status, const std::string& error) {
  SB_CHECK(status == "ok" || status == "failed" || status == "interrupted",
           "run status '{}' is not ok, failed or interrupted", status);
  H5QuietErrors quiet;
  h5_write_attribute(group_.get(), "status", status);
  h5_write_attribute(group_.get(), "error", error);
  h5_write_attribute(group_.get(), "finished_utc", metrics::utc_now_iso8601());
  flush();
}

}  // namespace sb::io
