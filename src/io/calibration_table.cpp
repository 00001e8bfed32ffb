// SPDX-License-Identifier: Apache-2.0
// The /calibration/<collective> compound tables: packed little-endian fields in the file,
// written whole (a sweep is small) from a RecordTable, chunked like every scalebench table.
#include "io/calibration_table.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <vector>

#include "io/h5_check.hpp"
#include "io/h5_objects.hpp"
#include "io/results_file.hpp"

namespace sb::io {

namespace {

constexpr hsize_t kRowsPerChunk = 256;

// The columns of /calibration/<collective>, in the schema's order.
RecordTable calibration_records(std::span<const CalibrationRow> rows) {
  using Kind = RecordColumn::Kind;
  RecordTable table({{"size_bytes", Kind::integer}, {"ranks", Kind::integer}, {"path", Kind::text, 16},
                     {"iterations", Kind::integer}, {"time_s", Kind::number}, {"algbw_gbps", Kind::number},
                     {"busbw_gbps", Kind::number}});
  for (const CalibrationRow& row : rows)
    table.add_row({row.size_bytes, row.ranks, row.path, row.iterations, row.time_s, row.algbw_gbps, row.busbw_gbps});
  return table;
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
  write_calibration_records(file, collective, calibration_records(rows));
}

void write_calibration_records(const std::filesystem::path& file, const std::string& name,
                               const RecordTable& records) {
  SB_CHECK(!name.empty() && name.find('/') == std::string::npos,
           "calibration table name '{}' is not usable as an HDF5 name", name);
  CalibrationGroup target = open_calibration_group(file);
  const hid_t group = target.group.get();
  H5QuietErrors quiet;
  if (h5_path_exists(group, name)) {
    SB_H5_CHECK(H5Ldelete(group, name.c_str(), H5P_DEFAULT));
  }
  const H5Handle file_type = records.record_type(true), memory_type = records.record_type(false);
  const std::vector<std::byte> packed = records.packed_records();
  const hsize_t length = records.size(), unlimited = H5S_UNLIMITED;
  H5Handle space{SB_H5_CHECK(H5Screate_simple(1, &length, &unlimited)), H5Sclose};
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_chunk(creation.get(), 1, &kRowsPerChunk));
  H5Handle table{SB_H5_CHECK(H5Dcreate2(group, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT,
                                        creation.get(), H5P_DEFAULT)),
                 H5Dclose};
  if (!packed.empty()) {
    SB_H5_CHECK(H5Dwrite(table.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()));
  }
  SB_H5_CHECK(H5Fflush(target.file.get(), H5F_SCOPE_GLOBAL));
}

}  // namespace sb::io
