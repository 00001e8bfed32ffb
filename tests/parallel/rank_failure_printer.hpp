// SPDX-License-Identifier: Apache-2.0
// What a rank other than 0 of an MPI GoogleTest binary prints: only its failed assertions,
// prefixed with its rank (rank 0 keeps GoogleTest's own report). Shared by the MPI test main
// and the NCCL communicator test.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

namespace sb::parallel::testing {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace sb::parallel::testing
