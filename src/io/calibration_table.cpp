// The /calibration/<collective> compound tables: packed little-endian fields in the file,
// written whole (a sweep is small), chunked like every scalebench table.
#include "io/calibration_table.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "io/h5_check.hpp"
#include "io/h5_compound.hpp"
#include "io/h5_objects.hpp"
#include "io/results_file.hpp"

namespace sb::io {

namespace {

constexpr std::size_t kPathBytes = 16;  // fixed-length, null-padded
constexpr hsize_t kRowsPerChunk = 256;

struct CalibrationRecord {
  std::int64_t size_bytes;
  std::int64_t ranks;
  char path[kPathBytes];
  std::int64_t iterations;
  double time_s;
  double algbw_gbps;
  double busbw_gbps;
};

// in_file: packed little-endian; otherwise native at CalibrationRecord's offsets.
H5Handle calibration_type(bool in_file) {
  const H5Handle path = h5_fixed_string_type(kPathBytes);
  const hid_t i64f = H5T_STD_I64LE, i64 = H5T_NATIVE_INT64, f64f = H5T_IEEE_F64LE, f64 = H5T_NATIVE_DOUBLE;
  const H5Member members[] = {{"size_bytes", i64f, i64, offsetof(CalibrationRecord, size_bytes), 8},
                              {"ranks", i64f, i64, offsetof(CalibrationRecord, ranks), 8},
                              {"path", path.get(), path.get(), offsetof(CalibrationRecord, path), kPathBytes},
                              {"iterations", i64f, i64, offsetof(CalibrationRecord, iterations), 8},
                              {"time_s", f64f, f64, offsetof(CalibrationRecord, time_s), 8},
                              {"algbw_gbps", f64f, f64, offsetof(CalibrationRecord, algbw_gbps), 8},
                              {"busbw_gbps", f64f, f64, offsetof(CalibrationRecord, busbw_gbps), 8}};
  return h5_compound_type(members, in_file, sizeof(CalibrationRecord));
}

// The file, created when missing, and its /calibration group.
struct CalibrationGroup {
  H5Handle file;
  H5Handle group;
};
CalibrationGroup open_calibration_group(const std::filesystem::path& file) {
  { ResultsFile::open_or_create(file); }  // creates it with the root attributes, or checks it
  H5Handle handle = open_existing_results_file(file, H5F_ACC_RDWR);
  H5QuietErrors quiet;
  H5Handle group = h5_open_or_create_group(handle.get(), "calibration");
  return {std::move(handle), std::move(group)};
}

}  // namespace

void write_calibration_context(const std::filesystem::path& file, const Attributes& attributes) {
  CalibrationGroup target = open_calibration_group(file);
  H5QuietErrors quiet;
  h5_write_attributes(target.group.get(), attributes);
  SB_H5_CHECK(H5Fflush(target.file.get(), H5F_SCOPE_GLOBAL));
}

void write_calibration_table(const std::filesystem::path& file, const std::string& collective,
                             std::span<const CalibrationRow> rows) {
  std::vector<CalibrationRecord> records(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CalibrationRow& row = rows[i];
    SB_USER_CHECK(row.path.size() < kPathBytes, "calibration path '{}' is longer than {} characters",
                  row.path, kPathBytes - 1);
    CalibrationRecord& record = records[i];
    record = CalibrationRecord{row.size_bytes, row.ranks, {}, row.iterations,
                               row.time_s,     row.algbw_gbps, row.busbw_gbps};
    std::memcpy(record.path, row.path.data(), row.path.size());
  }
  const H5Handle file_type = calibration_type(true);
  const H5Handle memory_type = calibration_type(false);
  write_calibration_records(file, collective, file_type.get(), memory_type.get(), records.data(), records.size());
}

void write_calibration_records(const std::filesystem::path& file, const std::string& name, hid_t file_type,
                               hid_t memory_type, const void* records, std::size_t count) {
  SB_CHECK(!name.empty() && name.find('/') == std::string::npos,
           "calibration table name '{}' is not usable as an HDF5 name", name);
  CalibrationGroup target = open_calibration_group(file);
  const hid_t group = target.group.get();
  H5QuietErrors quiet;
  if (h5_path_exists(group, name)) {
    SB_H5_CHECK(H5Ldelete(group, name.c_str(), H5P_DEFAULT));
  }
  const hsize_t length = count, unlimited = H5S_UNLIMITED;
  H5Handle space{SB_H5_CHECK(H5Screate_simple(1, &length, &unlimited)), H5Sclose};
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_chunk(creation.get(), 1, &kRowsPerChunk));
  H5Handle table{SB_H5_CHECK(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                        creation.get(), H5P_DEFAULT)),
                 H5Dclose};
  if (count > 0) {
    SB_H5_CHECK(H5Dwrite(table.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, records));
  }
  SB_H5_CHECK(H5Fflush(target.file.get(), H5F_SCOPE_GLOBAL));
}

}  // namespace sb::io
