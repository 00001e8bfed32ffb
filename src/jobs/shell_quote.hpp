// SPDX-License-Identifier: Apache-2.0
// Quoting of values that go into generated job scripts: every value taken from a config, a
// site profile or a path is written as one single-quoted shell word, so nothing in it ($(...),
// backquotes, quotes, newlines, globs) is ever expanded or executed. Leaves out scheduler
// directives, whose values are checked names instead (see directive_value), and the site
// profile's setup lines, which are the site's own shell text (job_script.hpp, site_setup).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sb::jobs {

// One POSIX shell word with exactly the bytes of `value`: 'a'\''b' for a'b. NUL is refused.
std::string shell_quote(std::string_view value);

// The words quoted and joined by single spaces.
std::string shell_join(const std::vector<std::string>& words);

// `value` for a directive line (#SBATCH --job-name=VALUE): a directive is read by the
// scheduler, not the shell, and ends at the line's end, so a value must not hold a newline,
// carriage return or NUL (UserError naming `what`). Characters other than letters, digits and
// . _ - + become '_' so no scheduler's own parser can split or extend the directive.
std::string directive_value(std::string_view value, std::string_view what);

}  // namespace sb::jobs
