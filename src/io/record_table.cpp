// SPDX-License-Identifier: Apache-2.0
// RecordTable: cells checked against their columns, packed into records for H5Dwrite.
#include "io/record_table.hpp"

#include <cstring>
#include <utility>

#include "core/check.hpp"
#include "io/h5_compound.hpp"

namespace sb::io {

namespace {

std::size_t field_bytes(const RecordColumn& column) {
  return column.kind == RecordColumn::Kind::text ? column.text_bytes : 8;
}

bool cell_fits(const RecordColumn& column, const RecordCell& cell) {
  switch (column.kind) {
    case RecordColumn::Kind::integer: return std::holds_alternative<std::int64_t>(cell);
    case RecordColumn::Kind::number: return std::holds_alternative<double>(cell);
    case RecordColumn::Kind::text: return std::holds_alternative<std::string>(cell);
  }
  return false;
}

}  // namespace

RecordTable::RecordTable(std::vector<RecordColumn> columns) : columns_(std::move(columns)) {
  SB_CHECK(!columns_.empty(), "a record table needs at least one column");
  for (const RecordColumn& column : columns_)
    SB_CHECK(!column.name.empty() && (column.kind != RecordColumn::Kind::text || column.text_bytes >= 2),
             "record column '{}': a name, and text of at least 2 bytes", column.name);
}

void RecordTable::add_row(std::vector<RecordCell> cells) {
  SB_CHECK(cells.size() == columns_.size(), "a record of {} cells for {} columns", cells.size(), columns_.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const RecordColumn& column = columns_[c];
    SB_CHECK(cell_fits(column, cells[c]), "record column '{}': a cell of the wrong kind", column.name);
    if (const auto* text = std::get_if<std::string>(&cells[c]))
      SB_USER_CHECK(text->size() < column.text_bytes, "{} '{}' is longer than {} characters", column.name, *text,
                    column.text_bytes - 1);
  }
  rows_.push_back(std::move(cells));
}

std::size_t RecordTable::record_bytes() const {
  std::size_t bytes = 0;
  for (const RecordColumn& column : columns_) bytes += field_bytes(column);
  return bytes;
}

H5Handle RecordTable::record_type(bool in_file) const {
  std::vector<H5Handle> texts;  // kept open until the compound type holds copies
  std::vector<H5Member> members;
  std::size_t offset = 0;
  for (const RecordColumn& column : columns_) {
    hid_t file_type = H5T_IEEE_F64LE, memory_type = H5T_NATIVE_DOUBLE;
    if (column.kind == RecordColumn::Kind::integer) file_type = H5T_STD_I64LE, memory_type = H5T_NATIVE_INT64;
    if (column.kind == RecordColumn::Kind::text) {
      texts.push_back(h5_fixed_string_type(column.text_bytes));
      file_type = memory_type = texts.back().get();
    }
    members.push_back({column.name.c_str(), file_type, memory_type, offset, field_bytes(column)});
    offset += field_bytes(column);
  }
  return h5_compound_type(members, in_file, record_bytes());
}

std::vector<std::byte> RecordTable::packed_records() const {
  std::vector<std::byte> records(rows_.size() * record_bytes());
  std::byte* at = records.data();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (const auto* i = std::get_if<std::int64_t>(&row[c])) std::memcpy(at, i, 8);
      if (const auto* d = std::get_if<double>(&row[c])) std::memcpy(at, d, 8);
      if (const auto* s = std::get_if<std::string>(&row[c])) std::memcpy(at, s->data(), s->size());
      at += field_bytes(columns_[c]);
    }
  return records;
}

}  // namespace sb::io
