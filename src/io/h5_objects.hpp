// SPDX-License-Identifier: Apache-2.0
// Scalar attributes, groups and links on open HDF5 objects, shared by the results writer and
// reader. Leaves out datasets and tables (results_file.cpp, results_reader.cpp own those).
#pragma once

#include <string>
#include <vector>

#include "io/attr_value.hpp"
#include "io/h5_check.hpp"

namespace sb::io {

// Creates or overwrites a scalar attribute: int64 as H5T_STD_I64LE, double as
// H5T_IEEE_F64LE, string as variable-length UTF-8 (h5py 3 reads it as str). An existing
// attribute of the same type is rewritten in place, so it keeps its position in the order.
void h5_write_attribute(hid_t object, const std::string& name, const AttrValue& value);
void h5_write_attributes(hid_t object, const Attributes& attributes);

bool h5_has_attribute(hid_t object, const std::string& name);
// Integers read as int64, floats as double, fixed or variable strings as std::string.
// UserError for anything else (arrays, enums, compounds): files are user data.
AttrValue h5_read_attribute(hid_t object, const std::string& name);
// Every attribute, in creation order when the object tracks it (scalebench's groups do),
// otherwise by name.
Attributes h5_read_attributes(hid_t object);

// A new group that tracks attribute creation order, so context and summary read back in
// the order they were written.
H5Handle h5_create_group(hid_t parent, const std::string& name);
H5Handle h5_open_or_create_group(hid_t parent, const std::string& name);
// True when every component of the relative or absolute path exists (H5Lexists alone
// fails, rather than answering false, when an intermediate group is missing).
bool h5_path_exists(hid_t location, const std::string& path);
// Names of the links in a group, in name order.
std::vector<std::string> h5_member_names(hid_t group);

}  // namespace sb::io
