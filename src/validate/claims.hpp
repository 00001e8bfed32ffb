// SPDX-License-Identifier: Apache-2.0
// Judging a procurement spec's claims against result files: each claim's measurement read from
// /calibration tables or /runs/<id>/summary, compared with its tolerance. Leaves out parsing
// (spec.hpp) and printing the table (cli/command_validate.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "validate/spec.hpp"

namespace sb::validate {

struct Verdict {
  std::string claim;        // the claim's name
  std::string what;         // "all_reduce 1 GiB on 8 ranks (scalebench)", "gpt-nano-dp2 tokens/s"
  double measured = 0;      // NaN when the run behind it did not finish ("ok")
  std::string unit;         // "TFLOP/s", "GB/s", "tokens/s", "samples/s", "" (fractions)
  std::string requirement;  // ">= 692.7", ">= 646 (70% of 923)", "923 ± 10%"
  // the same as numbers: the least a measurement may be (at_least, at_least_pct) or the claimed
  // figure (within_pct) and the percentage around it (NaN otherwise)
  double threshold = 0, tolerance_pct = 0;
  bool pass = false;
  bool missing = false;     // the files hold no measurement for it (note says what is missing)
  std::string note;         // why a claim without a number failed, else empty
};

// One verdict per claim, in spec order, every claim judged: one whose measurement is absent
// from every file (no such run, no table row of that size and rank count, a run in two files)
// is "missing" (not passed; its note names the spec, the claim and what is missing); a run that
// exists but did not end "ok" is a failed claim. UserError only for a file that is not a
// scalebench result file.
std::vector<Verdict> judge_claims(const Spec& spec, const std::string& spec_source,
                                  const std::vector<std::filesystem::path>& files);

}  // namespace sb::validate
