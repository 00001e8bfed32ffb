// SPDX-License-Identifier: Apache-2.0
// Which CPU this process runs on, as one line from /proc/cpuinfo: what `calibrate` records beside
// the kernel times it fits (they belong to that CPU) and what `train` compares with it. Leaves
// out the CPU's features (core/cpu_isa.hpp) and the run's context (metrics/run_context.hpp).
#pragma once

#include <string>

namespace sb {

// "AMD EPYC (AuthenticAMD, family 26, model 2)": the first processor's model name, vendor,
// family and model (a virtual machine may mask the model name; family and model still tell
// the part's generation). "unknown" where /proc/cpuinfo is absent.
std::string cpu_identity();

// The same from the text of a /proc/cpuinfo (for tests).
std::string cpu_identity_of(const std::string& cpuinfo);

// The first processor's model name alone ("AMD EPYC"), as a run's context records it; "unknown"
// where /proc/cpuinfo or the line is absent.
std::string cpu_model_name();

}  // namespace sb
