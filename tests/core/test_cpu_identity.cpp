// SPDX-License-Identifier: Apache-2.0
// The CPU as calibrate records it and train compares it: model name, vendor, family and model of
// the first processor in /proc/cpuinfo.
#include <gtest/gtest.h>

#include "core/cpu_identity.hpp"

namespace sb {
namespace {

TEST(CpuIdentity, ModelNameVendorFamilyAndModelOfTheFirstProcessor) {
  const std::string two_processors =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
      "stepping\t: 1\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Processor\n";
  EXPECT_EQ(cpu_identity_of(two_processors), "AMD EPYC (AuthenticAMD, family 26, model 2)");
  // "model" is not "model name": each key is matched whole
  EXPECT_EQ(cpu_identity_of("model name\t: X\nmodel\t\t: 7\nvendor_id\t: V\ncpu family\t: 1\n"), "X (V, family 1, model 7)");
  EXPECT_EQ(cpu_identity_of("processor\t: 0\n"), "unknown");
  EXPECT_EQ(cpu_identity_of(""), "unknown");
  // this machine: the context's model name opens the identity calibrate records
  const std::string name = cpu_model_name();
  EXPECT_EQ(cpu_identity().rfind(name, 0), 0u) << cpu_identity() << " does not open with " << name;
}

}  // namespace
}  // namespace sb
