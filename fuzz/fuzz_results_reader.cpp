// SPDX-License-Identifier: Apache-2.0
// Fuzzes the result-file reader behind `inspect`, `validate` and `collect`: the input is
// written as an .h5 file and summarised, and every run's step table read column by column.
// A file that is not a readable scalebench result must end in sb::UserError.
#include <cstddef>
#include <cstdint>

#include "fuzz_scratch.hpp"
#include "io/results_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = sb::fuzz::write_scratch("results.h5", data, size);
  sb::fuzz::expect_only_user_errors([&] { sb::io::summarize_results(file); });
  sb::fuzz::expect_only_user_errors([&] {
    for (const std::string& run : sb::io::list_runs(file)) {
      const std::string steps = "/runs/" + run + "/steps";
      if (!sb::io::has_object(file, steps)) continue;
      for (const std::string& field : sb::io::list_fields(file, steps)) {
        sb::fuzz::expect_only_user_errors([&] { sb::io::read_column(file, steps, field); });
      }
    }
  });
  return 0;
}
