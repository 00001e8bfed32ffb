// SPDX-License-Identifier: Apache-2.0
// The /calibration/gemm compound table: packed little-endian fields in the file, written whole
// through write_calibration_records from a RecordTable.
#include "io/gemm_table.hpp"

#include "io/calibration_table.hpp"
#include "io/record_table.hpp"

namespace sb::io {

void write_gemm_table(const std::filesystem::path& file, std::span<const GemmRow> rows) {
  using Kind = RecordColumn::Kind;
  RecordTable table({{"precision", Kind::text, 16}, {"path", Kind::text, 16}, {"m", Kind::integer},
                     {"n", Kind::integer}, {"k", Kind::integer}, {"ranks", Kind::integer}, {"threads", Kind::integer},
                     {"iterations", Kind::integer}, {"time_s", Kind::number}, {"tflops", Kind::number}});
  for (const GemmRow& row : rows)
    table.add_row({row.precision, row.path, row.m, row.n, row.k, row.ranks, row.threads, row.iterations, row.time_s,
                   row.tflops});
  write_calibration_records(file, "gemm", table);
}

}  // namespace sb::io
