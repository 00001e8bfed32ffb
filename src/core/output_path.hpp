// SPDX-License-Identifier: Apache-2.0
// An output a command writes must not be one of the files it reads: `train --out` onto its
// own config, or `report -o` onto a result file, would destroy the input (with --force, or
// silently). Compared as files (symbolic and hard links, `./a` and `a` included), not as text.
// Leaves out whether the output's folder is writable (each writer says).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace sb {

// An input of a command: what it is ("--config") and its path (empty: not given).
struct NamedInput {
  std::string what;
  std::filesystem::path path;
};

// UserError naming both when `output` (named `output_what`, "--out") is the same file as an input.
void require_not_an_input(const std::filesystem::path& output, const std::string& output_what,
                          const std::vector<NamedInput>& inputs);

}  // namespace sb
