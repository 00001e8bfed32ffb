// SPDX-License-Identifier: Apache-2.0
// Compound types of the small record tables (/calibration/<collective>, /calibration/gemm):
// packed little-endian in the file, the native struct's layout in memory. Leaves out writing
// and reading the datasets (calibration_table.cpp, gemm_table.cpp).
#pragma once

#include <cstddef>
#include <span>

#include "io/h5_check.hpp"

namespace sb::io {

// One field of a record: its name, its type in the file and in memory (differing for numbers:
// H5T_STD_I64LE against H5T_NATIVE_INT64), its offset in the native struct and its bytes.
struct H5Member {
  const char* name;
  hid_t file_type, memory_type;
  std::size_t offset, bytes;
};

// The record's type: in_file, the members packed in the order given; otherwise at their
// offsets in a struct of native_size bytes.
H5Handle h5_compound_type(std::span<const H5Member> members, bool in_file, std::size_t native_size);

// A fixed-length string of `bytes` bytes, null-padded.
H5Handle h5_fixed_string_type(std::size_t bytes);

}  // namespace sb::io
