// SPDX-License-Identifier: Apache-2.0
// Single-quote shell quoting and directive-safe names.
#include "jobs/shell_quote.hpp"

#include <cctype>

#include "core/check.hpp"

namespace sb::jobs {

std::string shell_quote(std::string_view value) {
  SB_USER_CHECK(value.find('\0') == std::string_view::npos,
                "a value for a job script holds a NUL byte, which no shell word can carry");
  std::string out = "'";
  for (const char ch : value) {
    if (ch == '\'')
      out += "'\\''";  // close, an escaped quote, reopen
    else
      out += ch;
  }
  out += "'";
  return out;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + shell_quote(word);
  return out;
}

std::string directive_value(std::string_view value, std::string_view what) {
  SB_USER_CHECK(value.find_first_of(std::string_view("\n\r\0", 3)) == std::string_view::npos,
                "{} holds a newline or NUL and cannot go into a scheduler directive; rename it", what);
  SB_USER_CHECK(!value.empty(), "{} is empty and cannot go into a scheduler directive", what);
  std::string out;
  for (const char ch : value) {
    const bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-' || ch == '+';
    out += keep ? ch : '_';
  }
  return out;
}

}  // namespace sb::jobs
