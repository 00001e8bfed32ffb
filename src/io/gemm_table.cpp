// The /calibration/gemm compound table: packed little-endian fields in the file, written whole
// through write_calibration_records.
#include "io/gemm_table.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/check.hpp"
#include "io/calibration_table.hpp"
#include "io/h5_check.hpp"

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
  H5Handle name_type{SB_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose};
  SB_H5_CHECK(H5Tset_size(name_type.get(), kNameBytes));
  SB_H5_CHECK(H5Tset_strpad(name_type.get(), H5T_STR_NULLPAD));
  const hid_t i64 = in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64;
  const hid_t f64 = in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
  struct Member {
    const char* name;
    hid_t type;
    std::size_t offset, bytes;
  };
  const Member members[] = {{"precision", name_type.get(), offsetof(GemmRecord, precision), kNameBytes},
                            {"path", name_type.get(), offsetof(GemmRecord, path), kNameBytes},
                            {"m", i64, offsetof(GemmRecord, m), 8},
                            {"n", i64, offsetof(GemmRecord, n), 8},
                            {"k", i64, offsetof(GemmRecord, k), 8},
                            {"ranks", i64, offsetof(GemmRecord, ranks), 8},
                            {"threads", i64, offsetof(GemmRecord, threads), 8},
                            {"iterations", i64, offsetof(GemmRecord, iterations), 8},
                            {"time_s", f64, offsetof(GemmRecord, time_s), 8},
                            {"tflops", f64, offsetof(GemmRecord, tflops), 8}};
  std::size_t packed = 0;
  for (const Member& member : members) packed += member.bytes;
  H5Handle type{SB_H5_CHECK(H5Tcreate(H5T_COMPOUND, in_file ? packed : sizeof(GemmRecord))), H5Tclose};
  std::size_t offset = 0;
  for (const Member& member : members) {
    SB_H5_CHECK(H5Tinsert(type.get(), member.name, in_file ? offset : member.offset, member.type));
    offset += member.bytes;
  }
  return type;
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
