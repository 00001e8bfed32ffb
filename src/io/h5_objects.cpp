// SPDX-License-Identifier: Apache-2.0
// Scalar attribute I/O, creation-order groups and path checks on HDF5 objects.
// Leaves out error printing: callers hold an H5QuietErrors while they work.
#include "io/h5_objects.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace sb::io {

namespace {

H5Handle utf8_string_type() {
  H5Handle type{SB_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose};
  SB_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  SB_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

// The file type of a value and a pointer to its in-memory form. For strings the memory
// form is a const char* (variable-length strings are written from an array of pointers).
struct AttrBuffer {
  H5Handle owned_type;  // only for strings
  hid_t file_type = H5I_INVALID_HID;
  hid_t memory_type = H5I_INVALID_HID;
  const void* data = nullptr;
  const char* string_pointer = nullptr;
};

void fill_buffer(const AttrValue& value, AttrBuffer& buffer) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    buffer.file_type = H5T_STD_I64LE;
    buffer.memory_type = H5T_NATIVE_INT64;
    buffer.data = integer;
  } else if (const auto* real = std::get_if<double>(&value)) {
    buffer.file_type = H5T_IEEE_F64LE;
    buffer.memory_type = H5T_NATIVE_DOUBLE;
    buffer.data = real;
  } else if (const auto* list = std::get_if<std::vector<std::int64_t>>(&value)) {
    buffer.file_type = H5T_STD_I64LE;
    buffer.memory_type = H5T_NATIVE_INT64;
    buffer.data = list->data();
  } else {
    buffer.owned_type = utf8_string_type();
    buffer.file_type = buffer.memory_type = buffer.owned_type.get();
    buffer.string_pointer = std::get<std::string>(value).c_str();
    buffer.data = &buffer.string_pointer;
  }
}

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* names) {
  try {
    static_cast<std::vector<std::string>*>(names)->emplace_back(name);
    return 0;
  } catch (...) {  // an exception must not unwind through HDF5's C frames
    return -1;
  }
}

std::string object_name(hid_t object) {
  char name[512] = "?";
  H5Iget_name(object, name, sizeof name);
  return name;
}

// A scalar, or for a list a 1-D array of its length (the null space when it is empty).
H5Handle attribute_space(const AttrValue& value) {
  const auto* list = std::get_if<std::vector<std::int64_t>>(&value);
  if (!list) return {SB_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose};
  if (list->empty()) return {SB_H5_CHECK(H5Screate(H5S_NULL)), H5Sclose};
  const hsize_t length = list->size();
  return {SB_H5_CHECK(H5Screate_simple(1, &length, nullptr)), H5Sclose};
}

std::vector<std::int64_t> read_integer_list(hid_t attribute, hid_t space) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(SB_H5_CHECK(H5Sget_simple_extent_npoints(space))));
  if (!values.empty()) SB_H5_CHECK(H5Aread(attribute, H5T_NATIVE_INT64, values.data()));
  return values;
}

}  // namespace

void h5_write_attribute(hid_t object, const std::string& name, const AttrValue& value) {
  AttrBuffer buffer;
  fill_buffer(value, buffer);
  const bool list = std::holds_alternative<std::vector<std::int64_t>>(value);
  if (list && h5_has_attribute(object, name)) SB_H5_CHECK(H5Adelete(object, name.c_str()));
  if (h5_has_attribute(object, name)) {
    H5Handle existing{SB_H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)), H5Aclose};
    H5Handle existing_type{SB_H5_CHECK(H5Aget_type(existing.get())), H5Tclose};
    if (SB_H5_CHECK(H5Tequal(existing_type.get(), buffer.file_type)) > 0) {
      SB_H5_CHECK(H5Awrite(existing.get(), buffer.memory_type, buffer.data));
      return;
    }
    existing.reset();
    SB_H5_CHECK(H5Adelete(object, name.c_str()));
  }
  H5Handle space = attribute_space(value);
  H5Handle attribute{SB_H5_CHECK(H5Acreate2(object, name.c_str(), buffer.file_type, space.get(),
                                            H5P_DEFAULT, H5P_DEFAULT)),
                     H5Aclose};
  SB_H5_CHECK(H5Awrite(attribute.get(), buffer.memory_type, buffer.data));
}

void h5_write_attributes(hid_t object, const Attributes& attributes) {
  for (const auto& [name, value] : attributes) h5_write_attribute(object, name, value);
}

bool h5_has_attribute(hid_t object, const std::string& name) {
  return SB_H5_CHECK(H5Aexists(object, name.c_str())) > 0;
}

AttrValue h5_read_attribute(hid_t object, const std::string& name) {
  H5Handle attribute{SB_H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)), H5Aclose};
  H5Handle type{SB_H5_CHECK(H5Aget_type(attribute.get())), H5Tclose};
  H5Handle space{SB_H5_CHECK(H5Aget_space(attribute.get())), H5Sclose};
  const H5T_class_t type_class = H5Tget_class(type.get());
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (type_class == H5T_INTEGER && (space_class == H5S_NULL ||
                                    (space_class == H5S_SIMPLE && H5Sget_simple_extent_ndims(space.get()) == 1)))
    return read_integer_list(attribute.get(), space.get());
  if (SB_H5_CHECK(H5Sget_simple_extent_npoints(space.get())) != 1 ||
      (type_class != H5T_INTEGER && type_class != H5T_FLOAT && type_class != H5T_STRING)) {
    throw UserError(fmt::format("attribute '{}' of {} is not a single number or string, nor a list of integers", name,
                                object_name(object)));
  }
  if (type_class == H5T_INTEGER) {
    std::int64_t value = 0;
    SB_H5_CHECK(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value));
    return value;
  }
  if (type_class == H5T_FLOAT) {
    double value = 0.0;
    SB_H5_CHECK(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value));
    return value;
  }
  if (SB_H5_CHECK(H5Tis_variable_str(type.get())) > 0) {
    H5Handle memory_type = utf8_string_type();
    SB_H5_CHECK(H5Tset_cset(memory_type.get(), H5Tget_cset(type.get())));
    char* text = nullptr;
    SB_H5_CHECK(H5Aread(attribute.get(), memory_type.get(), &text));
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  SB_H5_CHECK(H5Aread(attribute.get(), type.get(), value.data()));
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

Attributes h5_read_attributes(hid_t object) {
  std::vector<std::string> names;
  hsize_t position = 0;
  if (H5Aiterate2(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, &position, collect_attribute_name,
                  &names) < 0) {
    names.clear();  // creation order not tracked by this object
    position = 0;
    SB_H5_CHECK(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &position,
                            collect_attribute_name, &names));
  }
  Attributes attributes;
  attributes.reserve(names.size());
  for (auto& name : names) {
    AttrValue value = h5_read_attribute(object, name);
    attributes.emplace_back(std::move(name), std::move(value));
  }
  return attributes;
}

namespace {
constexpr unsigned kMaxCompactAttributes = 256;  // far above what a run, context or summary holds
}  // namespace

H5Handle h5_create_group(hid_t parent, const std::string& name) {
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_GROUP_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_attr_creation_order(creation.get(),
                                         H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  // Keep attributes in the object header (compact) rather than dense storage: HDF5 1.10's
  // H5Ocopy crashes copying dense variable-length string attributes (how `run` merges runs).
  SB_H5_CHECK(H5Pset_attr_phase_change(creation.get(), kMaxCompactAttributes, kMaxCompactAttributes));
  return H5Handle{SB_H5_CHECK(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, creation.get(),
                                         H5P_DEFAULT)),
                  H5Gclose};
}

H5Handle h5_open_or_create_group(hid_t parent, const std::string& name) {
  if (h5_path_exists(parent, name)) {
    return H5Handle{SB_H5_CHECK(H5Gopen2(parent, name.c_str(), H5P_DEFAULT)), H5Gclose};
  }
  return h5_create_group(parent, name);
}

bool h5_path_exists(hid_t location, const std::string& path) {
  std::string prefix = path.starts_with('/') ? "/" : "";
  std::size_t begin = prefix.size();
  while (begin < path.size()) {
    std::size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin) {
      prefix += path.substr(begin, end - begin);
      if (SB_H5_CHECK(H5Lexists(location, prefix.c_str(), H5P_DEFAULT)) <= 0) return false;
      prefix += '/';
    }
    begin = end + 1;
  }
  return true;
}

std::vector<std::string> h5_member_names(hid_t group) {
  H5G_info_t info{};
  SB_H5_CHECK(H5Gget_info(group, &info));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length =
        SB_H5_CHECK(H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT));
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    SB_H5_CHECK(H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT));
    name.resize(static_cast<std::size_t>(length));
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace sb::io
