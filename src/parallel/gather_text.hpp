// SPDX-License-Identifier: Apache-2.0
// Collects one string from every rank on a root rank (traces, error reports, per-rank rows
// serialised as text). Leaves out anything that must scale: it is for end-of-run data.
#pragma once

#include <string>
#include <vector>

#include "parallel/communicator.hpp"

namespace sb::parallel {

// Collective over comm. On root: every rank's text, indexed by rank. Elsewhere: empty.
std::vector<std::string> gather_text(Communicator& comm, const std::string& text, int root = 0);

}  // namespace sb::parallel
