// SPDX-License-Identifier: Apache-2.0
// The environment ctest gives every GoogleTest case (tests/CMakeLists.txt, sb_gtest): all the
// declared variables arrive, not only the first (gtest_discover_tests splits unescaped lists).
// Run by hand, outside ctest, none is set and there is nothing to check.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

TEST(TestEnvironment, CtestSetsEveryDeclaredVariable) {
  if (variable("OMP_PROC_BIND").empty() && variable("SB_TEST_BINARY").empty()) {
    std::printf("not run by ctest: no declared variable to check\n");
    return;
  }
  EXPECT_EQ(variable("OMP_PROC_BIND"), "false");  // test_core is a unit binary: run beside another, unbound
  EXPECT_EQ(variable("OMP_PLACES"), "threads");
  EXPECT_EQ(variable("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(variable("SB_DATA_DIR"), std::string(SB_SOURCE_DIR) + "/data");
  EXPECT_EQ(variable("SB_TEST_BINARY"), "test_core") << "the last declared variable did not arrive";
}

}  // namespace
