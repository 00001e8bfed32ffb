// SPDX-License-Identifier: Apache-2.0
// Writes a small result file for check_results_with_h5py.py: one finished run with every
// table and group filled, and one run left interrupted. Leaves out training: rows are made up.
#include <cstdio>
#include <exception>

#include "example_run.hpp"
#include "metrics/run_context.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.h5\n", argv[0]);
    return 2;
  }
  namespace t = sb::io::testing;
  try {
    sb::io::ResultsFile file = sb::io::ResultsFile::create(argv[1]);
    sb::io::RunWriter run = file.begin_run("gpt-nano-dp2", t::example_run_attributes());
    run.write_context(sb::metrics::collect_run_context(1));
    run.write_prediction({{"step_time_s", 0.011}, {"memory_bytes", std::int64_t{9 << 20}}});
    for (std::int64_t s = 0; s < 5; ++s) run.append_step(t::example_step(s));
    for (const sb::io::EvalRow& row : t::example_evals()) run.append_eval(row);
    run.write_memory(t::example_memory());
    run.write_ranks(t::example_ranks());
    run.append_timeline(t::example_timeline());
    run.write_collectives(t::example_collectives());
    run.write_summary({{"step_time_median_s", 0.012}, {"tokens_per_s", 42666.0}, {"mfu", 0.1}});
    run.finish("ok", "");

    sb::io::RunWriter left = file.begin_run("resnet-mini-dp1", t::example_run_attributes("resnet-mini"));
    left.append_step(t::example_step(0));
    return 0;  // left goes out of scope without finish: status stays "interrupted"
  } catch (const std::exception& error) {
    std::fprintf(stderr, "write_example_results: %s\n", error.what());
    return 1;
  }
}
