// The /calibration/gemm compound table: packed little-endian fields in the file, written whole
// through write_calibration_records.
#include "io/gemm_table.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/check.hpp"
#include "io/calibration_table.hpp"
#include "io/h5_check.hpp"
#include "io/h5_compound.hpp"

namespace sb::io {

namespace {

constexpr std::size_t kNameBytes = 16;  // precision and path: fixed-length, null-padded

struct GemmRecord {
  char precision[kNameBytes];
  char path[kNameBytes];
  std::int64_t m, n, k, ranks, threads, iterations;
  double time_s, tflops;
};

// in_file: packed little-endian; otherwise native at GemmRecord's offsets.
H5Handle gemm_type(bool in_file) {
  const H5Handle name = h5_fixed_string_type(kNameBytes);
  const hid_t i64f = H5T_STD_I64LE, i64 = H5T_NATIVE_INT64, f64f = H5T_IEEE_F64LE, f64 = H5T_NATIVE_DOUBLE;
  const H5Member members[] = {{"precision", name.get(), name.get(), offsetof(GemmRecord, precision), kNameBytes},
                              {"path", name.get(), name.get(), offsetof(GemmRecord, path), kNameBytes},
                              {"m", i64f, i64, offsetof(GemmRecord, m), 8},
                              {"n", i64f, i64, offsetof(GemmRecord, n), 8},
                              {"k", i64f, i64, offsetof(GemmRecord, k), 8},
                              {"ranks", i64f, i64, offsetof(GemmRecord, ranks), 8},
                              {"threads", i64f, i64, offsetof(GemmRecord, threads), 8},
                              {"iterations", i64f, i64, offsetof(GemmRecord, iterations), 8},
                              {"time_s", f64f, f64, offsetof(GemmRecord, time_s), 8},
                              {"tflops", f64f, f64, offsetof(GemmRecord, tflops), 8}};
  return h5_compound_type(members, in_file, sizeof(GemmRecord));
}

void copy_name(char (&field)[kNameBytes], const std::string& text, const char* what) {
  SB_USER_CHECK(text.size() < kNameBytes, "gemm {} '{}' is longer than {} characters", what, text, kNameBytes - 1);
  std::memcpy(field, text.data(), text.size());
}

}  // namespace

void write_gemm_table(const std::filesystem::path& file, std::span<const GemmRow> rows) {
  std::vector<GemmRecord> records(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GemmRow& row = rows[i];
    GemmRecord& record = records[i];
    record = GemmRecord{{}, {}, row.m, row.n, row.k, row.ranks, row.threads, row.iterations, row.time_s, row.tflops};
    copy_name(record.precision, row.precision, "precision");
    copy_name(record.path, row.path, "path");
  }
  const H5Handle file_type = gemm_type(true);
  const H5Handle memory_type = gemm_type(false);
  write_calibration_records(file, "gemm", file_type.get(), memory_type.get(), records.data(), records.size());
}

}  // namespace sb::io
