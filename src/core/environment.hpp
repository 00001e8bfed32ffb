// SPDX-License-Identifier: Apache-2.0
// Reading the environment variables scalebench acts on, with bounds: a value that is set but
// is not what the variable takes is one sentence naming the variable, its value and what is
// allowed (UserError, exit 2), never a silent fallback, a wrapped integer or an endless sleep.
// Leaves out what each variable means (its reader).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb {

// The value of `name`; nullopt when unset or empty (an empty variable is an unset one).
std::optional<std::string> environment_text(const char* name);

// An integer in [min, max] from `name`; nullopt when unset or empty. `meaning` ends the sentence
// ("a thread count"). UserError for anything else: text, a fraction, a sign out of range, overflow.
std::optional<std::int64_t> environment_integer(const char* name, std::int64_t min, std::int64_t max,
                                                const std::string& meaning);

// One of `choices` from `name`; nullopt when unset or empty; UserError naming the choices otherwise.
std::optional<std::string> environment_choice(const char* name, const std::vector<std::string>& choices);

// An integer in [min, max] from `text`, nullopt when it is not one (sign, digits and nothing else).
std::optional<std::int64_t> parse_bounded_integer(const std::string& text, std::int64_t min, std::int64_t max);

}  // namespace sb
