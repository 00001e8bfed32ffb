// SPDX-License-Identifier: Apache-2.0
// RowPrinter: each cell formatted to its column's width and decimals.
#include "measure/row_printer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "core/check.hpp"

namespace sb::measure {

namespace {

std::string cell_text(const io::RecordCell& cell, int decimals) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&cell))
    return std::isfinite(*d) ? fmt::format("{:.{}f}", *d, decimals) : std::string("-");  // not measured
  return std::get<std::string>(cell);
}

std::string aligned(const std::string& text, const PrintedColumn& column) {
  return column.left ? fmt::format("{:<{}}", text, column.width) : fmt::format("{:>{}}", text, column.width);
}

}  // namespace

RowPrinter::RowPrinter(std::FILE* out, std::vector<PrintedColumn> columns)
    : out_(out), columns_(std::move(columns)) {
  SB_CHECK(out_ != nullptr && !columns_.empty(), "a row printer needs a stream and columns");
}

std::string RowPrinter::header_line() const {
  std::string text;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (c) text += ' ';
    text += aligned(columns_[c].heading, columns_[c]);
  }
  return text;
}

void RowPrinter::header() const {
  std::fprintf(out_, "%s\n", header_line().c_str());
  std::fflush(out_);
}

std::string RowPrinter::line(const std::vector<io::RecordCell>& cells) const {
  SB_CHECK(cells.size() <= columns_.size(), "a row of {} cells for {} columns", cells.size(), columns_.size());
  std::string text;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (c) text += ' ';
    text += aligned(cell_text(cells[c], columns_[c].decimals), columns_[c]);
  }
  return text;
}

void RowPrinter::row(const std::vector<io::RecordCell>& cells) const {
  std::fprintf(out_, "%s\n", line(cells).c_str());
  std::fflush(out_);
}

}  // namespace sb::measure
