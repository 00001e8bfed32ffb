// The value type of an HDF5 attribute as scalebench writes it: a 64-bit integer, a double or
// a UTF-8 string. Leaves out arrays and nested types (results attributes are scalars).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sb::io {

using AttrValue = std::variant<std::int64_t, double, std::string>;

// Attributes in the order they are written (and read back: groups track creation order).
using Attributes = std::vector<std::pair<std::string, AttrValue>>;

// "42", "0.125" (shortest form that reads back to the same double), or the string itself.
inline std::string to_string(const AttrValue& value) {
  return std::visit([](const auto& v) { return fmt::format("{}", v); }, value);
}

}  // namespace sb::io
