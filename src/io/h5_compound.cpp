// SPDX-License-Identifier: Apache-2.0
// H5Tcreate and H5Tinsert over a member list.
#include "io/h5_compound.hpp"

namespace sb::io {

H5Handle h5_compound_type(std::span<const H5Member> members, bool in_file, std::size_t native_size) {
  std::size_t packed = 0;
  for (const H5Member& member : members) packed += member.bytes;
  H5Handle type{SB_H5_CHECK(H5Tcreate(H5T_COMPOUND, in_file ? packed : native_size)), H5Tclose};
  std::size_t offset = 0;
  for (const H5Member& member : members) {
    SB_H5_CHECK(H5Tinsert(type.get(), member.name, in_file ? offset : member.offset,
                          in_file ? member.file_type : member.memory_type));
    offset += member.bytes;
  }
  return type;
}

H5Handle h5_fixed_string_type(std::size_t bytes) {
  H5Handle type{SB_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose};
  SB_H5_CHECK(H5Tset_size(type.get(), bytes));
  SB_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  return type;
}

}  // namespace sb::io
