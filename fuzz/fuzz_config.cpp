// SPDX-License-Identifier: Apache-2.0
// Fuzzes the case config reader: YAML text -> parse_yaml_text -> parse_train_config, then one
// `--set key=value` override (the input's first line) applied to the same text. A malformed or
// wrong config must end in sb::UserError (one sentence, exit 2), never another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_scratch.hpp"
#include "plan/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sb::fuzz::expect_only_user_errors([&] {
    const YAML::Node root = sb::plan::parse_yaml_text(text, "fuzz.yaml");
    sb::plan::parse_train_config(root, "fuzz.yaml");
  });
  const auto newline = text.find('\n');
  if (newline == std::string::npos) return 0;
  sb::fuzz::expect_only_user_errors([&] {
    YAML::Node root = sb::plan::parse_yaml_text(text.substr(newline + 1), "fuzz.yaml");
    sb::plan::apply_override(root, text.substr(0, newline), "fuzz.yaml");
    sb::plan::parse_train_config(root, "fuzz.yaml");
  });
  return 0;
}
