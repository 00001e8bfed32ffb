// SPDX-License-Identifier: Apache-2.0
// A table of records described by its columns: the form in which measured rows (the collective
// and GEMM sweeps' tables, a benchmark's rows) are handed to HDF5 and to stdout. In a file it is
// a compound dataset whose fields are the columns in order, packed little-endian, text
// fixed-length and null-padded; on stdout measure/row_printer.hpp aligns it. Leaves out where a
// table goes in a file (calibration_table.hpp) and what the rows measure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "io/h5_check.hpp"

namespace sb::io {

struct RecordColumn {
  enum class Kind { integer, number, text };
  std::string name;  // the HDF5 field name: part of the schema
  Kind kind = Kind::number;
  std::size_t text_bytes = 16;  // a text field's fixed length in the file, its null included
};

using RecordCell = std::variant<std::int64_t, double, std::string>;

class RecordTable {
 public:
  explicit RecordTable(std::vector<RecordColumn> columns);

  // One record, a cell per column in order: integer columns take std::int64_t, number columns
  // double, text columns std::string shorter than text_bytes (UserError otherwise).
  void add_row(std::vector<RecordCell> cells);

  const std::vector<RecordColumn>& columns() const { return columns_; }
  std::size_t size() const { return rows_.size(); }
  const std::vector<RecordCell>& row(std::size_t i) const { return rows_.at(i); }

  // The compound type of one record: in_file, little-endian; otherwise native numbers. Both
  // packed in column order, so packed_records() is the memory image for the native one.
  H5Handle record_type(bool in_file) const;
  std::vector<std::byte> packed_records() const;

 private:
  std::size_t record_bytes() const;

  std::vector<RecordColumn> columns_;
  std::vector<std::vector<RecordCell>> rows_;
};

}  // namespace sb::io
