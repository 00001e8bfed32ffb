// SPDX-License-Identifier: Apache-2.0
// Record tables (io/record_table.hpp) as a file holds them: the calibration and GEMM tables keep
// their schema (field names, order, HDF5 types) when written through one column description, a
// table of any columns reads back cell by cell, and a bad cell is refused before anything is
// written.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "io/calibration_table.hpp"
#include "io/gemm_table.hpp"
#include "io/record_table.hpp"
#include "io/results_reader.hpp"

namespace {

namespace fs = std::filesystem;
using sb::io::RecordColumn;
using Kind = sb::io::RecordColumn::Kind;

fs::path scratch_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("sb_record_table_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / name;
  fs::remove(file);
  return file;
}

// The HDF5 class of each field of a table's compound type, in order (H5T_INTEGER, H5T_FLOAT, H5T_STRING).
std::vector<H5T_class_t> field_classes(const fs::path& file, const std::string& table) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, table.c_str(), H5P_DEFAULT);
  const hid_t t = H5Dget_type(d);
  std::vector<H5T_class_t> classes;
  for (int i = 0; i < H5Tget_nmembers(t); ++i) classes.push_back(H5Tget_member_class(t, static_cast<unsigned>(i)));
  H5Tclose(t), H5Dclose(d), H5Fclose(f);
  return classes;
}

TEST(RecordTable, CollectiveTableKeepsItsSchema) {
  const fs::path file = scratch_file("collective.h5");
  const std::vector<sb::io::CalibrationRow> rows = {{1024, 2, "mpi", 100, 1.5e-6, 0.68, 1.36},
                                                    {2048, 2, "scalebench", 50, 2.5e-6, 0.82, 1.64}};
  sb::io::write_calibration_table(file, "all_reduce", rows);
  EXPECT_EQ(sb::io::list_fields(file, "/calibration/all_reduce"),
            (std::vector<std::string>{"size_bytes", "ranks", "path", "iterations", "time_s", "algbw_gbps", "busbw_gbps"}));
  EXPECT_EQ(field_classes(file, "/calibration/all_reduce"),
            (std::vector<H5T_class_t>{H5T_INTEGER, H5T_INTEGER, H5T_STRING, H5T_INTEGER, H5T_FLOAT, H5T_FLOAT, H5T_FLOAT}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/all_reduce", "size_bytes"), (std::vector<double>{1024, 2048}));
  EXPECT_EQ(sb::io::read_string_column(file, "/calibration/all_reduce", "path"),
            (std::vector<std::string>{"mpi", "scalebench"}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/all_reduce", "busbw_gbps"), (std::vector<double>{1.36, 1.64}));
}

TEST(RecordTable, GemmTableKeepsItsSchema) {
  const fs::path file = scratch_file("gemm.h5");
  const std::vector<sb::io::GemmRow> rows = {{"bf16", "cpu", 512, 256, 128, 1, 2, 10, 1e-4, 0.335}};
  sb::io::write_gemm_table(file, rows);
  EXPECT_EQ(sb::io::list_fields(file, "/calibration/gemm"),
            (std::vector<std::string>{"precision", "path", "m", "n", "k", "ranks", "threads", "iterations", "time_s",
                                      "tflops"}));
  EXPECT_EQ(sb::io::read_string_column(file, "/calibration/gemm", "precision"), (std::vector<std::string>{"bf16"}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/gemm", "k"), (std::vector<double>{128}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/gemm", "tflops"), (std::vector<double>{0.335}));
}

TEST(RecordTable, AnyColumnsReadBackCellByCell) {
  const fs::path file = scratch_file("any.h5");
  sb::io::RecordTable table({{"schedule", Kind::text, 8}, {"m", Kind::integer}, {"bubble", Kind::number}});
  table.add_row({std::string("1f1b"), std::int64_t{8}, 0.2727});
  table.add_row({std::string("gpipe"), std::int64_t{4}, 0.4286});
  sb::io::write_calibration_records(file, "pipeline_bubble", table);
  EXPECT_EQ(sb::io::count_rows(file, "/calibration/pipeline_bubble"), 2);
  EXPECT_EQ(sb::io::read_string_column(file, "/calibration/pipeline_bubble", "schedule"),
            (std::vector<std::string>{"1f1b", "gpipe"}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/pipeline_bubble", "m"), (std::vector<double>{8, 4}));
  EXPECT_EQ(sb::io::read_column(file, "/calibration/pipeline_bubble", "bubble"), (std::vector<double>{0.2727, 0.4286}));
}

TEST(RecordTable, BadCellsAreRefusedBeforeWriting) {
  sb::io::RecordTable table({{"path", Kind::text, 4}, {"ranks", Kind::integer}});
  EXPECT_THROW(table.add_row({std::string("toolong"), std::int64_t{1}}), sb::UserError);
  EXPECT_THROW(table.add_row({std::string("ok"), 1.0}), sb::Error);           // a number in an integer column
  EXPECT_THROW(table.add_row({std::string("ok")}), sb::Error);                // a cell short
  EXPECT_EQ(table.size(), 0u);
  const fs::path file = scratch_file("refused.h5");
  EXPECT_THROW(sb::io::write_calibration_table(file, "all_reduce", std::vector<sb::io::CalibrationRow>{
                                                                       {8, 1, std::string(16, 'x'), 1, 1, 1, 1}}),
               sb::UserError);
  EXPECT_FALSE(fs::exists(file));
}

}  // namespace
