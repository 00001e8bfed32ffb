// SPDX-License-Identifier: Apache-2.0
// The value type of an HDF5 attribute as scalebench writes it: a 64-bit integer, a double, a
// UTF-8 string, or a list of 64-bit integers (a 1-D array: pipeline stage sizes). Leaves out
// other arrays and nested types.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sb::io {

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

// Attributes in the order they are written (and read back: groups track creation order).
using Attributes = std::vector<std::pair<std::string, AttrValue>>;

// "42", "0.125" (shortest form that reads back to the same double), the string itself, or
// "[9, 3]".
inline std::string to_string(const AttrValue& value) {
  return std::visit([](const auto& v) { return fmt::format("{}", v); }, value);  // a list: fmt/ranges.h
}

}  // namespace sb::io
