// SPDX-License-Identifier: Apache-2.0
// Measured rows on stdout, the way nccl-tests prints them: a header line of the columns, then
// each row as soon as it is measured, aligned under it, flushed. The same cells go to HDF5
// through io::RecordTable. Leaves out what a row measures and the file tables.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "io/record_table.hpp"

namespace sb::measure {

struct PrintedColumn {
  std::string heading;
  int width = 10;     // characters, the heading's included
  int decimals = 4;   // for a number (double) cell
  bool left = false;  // aligned left (a name) rather than right (a figure)
};

class RowPrinter {
 public:
  RowPrinter(std::FILE* out, std::vector<PrintedColumn> columns);

  void header() const;
  // The line header() prints, without its newline (to add a note after it).
  std::string header_line() const;
  // One line: a cell per column (fewer leaves the last columns blank), space-separated.
  void row(const std::vector<io::RecordCell>& cells) const;
  // The line row() would print, without its newline.
  std::string line(const std::vector<io::RecordCell>& cells) const;

 private:
  std::FILE* out_;
  std::vector<PrintedColumn> columns_;
};

}  // namespace sb::measure
