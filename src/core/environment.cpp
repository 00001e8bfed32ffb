// SPDX-License-Identifier: Apache-2.0
// Bounded parsing of environment variables: from_chars (no locale, no wrap-around), the whole
// value or nothing.
#include "core/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/check.hpp"

namespace sb {

namespace {

// At most this much of a value goes into a sentence: a variable can hold 128 KiB.
std::string shown(const std::string& value) {
  constexpr std::size_t kShown = 40;
  return value.size() <= kShown ? value : value.substr(0, kShown) + "...";
}

}  // namespace

std::optional<std::string> environment_text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::int64_t> parse_bounded_integer(const std::string& text, std::int64_t min, std::int64_t max) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;  // from_chars takes '-' only
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last || first == last || value < min || value > max) return std::nullopt;
  return value;
}

std::optional<std::int64_t> environment_integer(const char* name, std::int64_t min, std::int64_t max,
                                                const std::string& meaning) {
  const std::optional<std::string> text = environment_text(name);
  if (!text) return std::nullopt;
  const std::optional<std::int64_t> value = parse_bounded_integer(*text, min, max);
  SB_USER_CHECK(value.has_value(), "environment variable {} is '{}' but must be an integer from {} to {} ({}); "
                "unset it or give one", name, shown(*text), min, max, meaning);
  return value;
}

std::optional<std::string> environment_choice(const char* name, const std::vector<std::string>& choices) {
  const std::optional<std::string> text = environment_text(name);
  if (!text) return std::nullopt;
  SB_USER_CHECK(std::find(choices.begin(), choices.end(), *text) != choices.end(),
                "environment variable {} is '{}' but must be one of: {}", name, shown(*text), fmt::join(choices, ", "));
  return text;
}

}  // namespace sb
