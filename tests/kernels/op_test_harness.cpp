// SPDX-License-Identifier: Apache-2.0
// Tolerance look-up and failure reports of the kernel op tests.
// Leaves out the op descriptions themselves (kernel_op_descriptions.hpp).
#include "op_test_harness.hpp"

#include <fmt/format.h>

namespace sb::kernels::testing {

Tolerance tolerance_for(DType dtype, std::string_view op, Check check) {
  const ToleranceEntry* fallback = nullptr;
  for (const ToleranceEntry& entry : kTolerances) {
    if (entry.dtype != dtype || entry.check != check) continue;
    if (entry.op == op) return entry.tolerance;
    if (entry.op.empty()) fallback = &entry;
  }
  if (!fallback) {
    ADD_FAILURE() << "no tolerance for " << to_string(dtype) << " " << op << " check "
                  << static_cast<int>(check);
    return {0, 0};
  }
  return fallback->tolerance;
}

void report(const std::vector<Mismatch>& mismatches, std::string_view what) {
  for (const Mismatch& m : mismatches) {
    ADD_FAILURE() << fmt::format(
        "{}: {} has {} of {} elements out of tolerance; worst at [{}]: {:.9g}, expected {:.9g}",
        what, m.tensor, m.failed, m.total, m.index, m.actual, m.expected);
  }
}

}  // namespace sb::kernels::testing
