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
  bool pass = false;
  std::string note;         // why a claim without a number failed, else empty
};

// One verdict per claim, in spec order. A claim whose measurement is absent from every file
// (no such run, no table row of that size and rank count, a run in two files) is a UserError
// that names the spec, the claim and what is missing; a run that exists but did not end "ok"
// is a failed claim instead.
std::vector<Verdict> judge_claims(const Spec& spec, const std::string& spec_source,
                                  const std::vector<std::filesystem::path>& files);

}  // namespace sb::validate
