// SPDX-License-Identifier: Apache-2.0
// What every fuzz target shares: a per-process scratch folder for the files a loader reads
// (the loaders take paths, not bytes), and the rule that a loader may refuse input only with
// sb::UserError: any other exception is a finding (the CLI would report an internal error).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/check.hpp"

namespace sb::fuzz {

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* base = std::getenv("TMPDIR");
    auto d = std::filesystem::path(base && *base ? base : "/tmp") / ("sb_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::filesystem::path write_scratch(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const auto path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

// Runs f; a UserError is the loader refusing bad input (fine); anything else aborts with it.
template <class F>
void expect_only_user_errors(F&& f) {
  try {
    f();
  } catch (const sb::UserError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: an exception other than sb::UserError escaped: %s\n", e.what());
    std::abort();
  }
}

}  // namespace sb::fuzz
