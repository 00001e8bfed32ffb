// SPDX-License-Identifier: Apache-2.0
// Writing a whole output file (a trace, a profile) so that a reader sees the old file or the
// new one, never half of one: the bytes go to "<path>.partial", are flushed to disk, and the
// partial file is renamed over the path. Every system call is checked: a full disk is a
// StorageError naming the path, and the partial file is removed. Leaves out formats.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace sb {

// what: "the trace file", "the site profile" (the sentence reads "cannot write <what> <path>").
void replace_file(const std::filesystem::path& path, std::string_view contents, const std::string& what);

}  // namespace sb
