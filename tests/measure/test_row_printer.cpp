// SPDX-License-Identifier: Apache-2.0
// Rows on stdout (measure/row_printer.hpp): each cell to its column's width and decimals,
// names left and figures right, a short row leaving the last columns out, and the header
// aligned with the rows under it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/check.hpp"
#include "measure/row_printer.hpp"

namespace {

using sb::measure::RowPrinter;

TEST(RowPrinter, CellsTakeTheirColumnsWidthAndDecimals) {
  const RowPrinter printer(stdout, {{"gemm", 6, 0, true}, {"m", 5}, {"time_us", 9, 1}, {"tflops", 8, 3}});
  EXPECT_EQ(printer.line({std::string("bf16"), std::int64_t{512}, 12.345, 0.33549}),
            "bf16     512      12.3    0.335");
  EXPECT_EQ(printer.header_line(), "gemm       m   time_us   tflops");
  EXPECT_EQ(printer.header_line().size(), printer.line({std::string("fp32"), std::int64_t{1}, 1.0, 1.0}).size());
}

TEST(RowPrinter, AShortRowLeavesTheLastColumnsOut) {
  const RowPrinter printer(stdout, {{"size", 6}, {"busbw", 8, 2}, {"ratio", 6, 3}});
  EXPECT_EQ(printer.line({std::string("4 KiB"), 1.5}), " 4 KiB     1.50");
  EXPECT_THROW(printer.line({1.0, 2.0, 3.0, 4.0}), sb::Error);
}

TEST(RowPrinter, WritesWhatItFormats) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  const RowPrinter printer(out, {{"a", 3}, {"b", 4, 1}});
  printer.header();
  printer.row({std::int64_t{7}, 2.26});
  std::rewind(out);
  char buffer[64] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, n), "  a    b\n  7  2.3\n");
}

}  // namespace
