// SPDX-License-Identifier: Apache-2.0
// Output-versus-input checks by file identity (see output_path.hpp).
#include "core/output_path.hpp"

#include <system_error>

#include "core/check.hpp"

namespace sb {

namespace {

// equivalent() compares device and inode where both exist; two outputs not written yet
// (--out and --checkpoint) are the same when their resolved paths are.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) return std::filesystem::equivalent(a, b, ec);
  const std::filesystem::path ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  const std::filesystem::path cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

}  // namespace

void require_not_an_input(const std::filesystem::path& output, const std::string& output_what,
                          const std::vector<NamedInput>& inputs) {
  for (const NamedInput& input : inputs) {
    if (input.path.empty()) continue;
    SB_USER_CHECK(!same_file(output, input.path), "{} '{}' is the same file as {} '{}'; give the output a file of its own",
                  output_what, output.string(), input.what, input.path.string());
  }
}

}  // namespace sb
