// SPDX-License-Identifier: Apache-2.0
// Every environment variable a command acts on, read once before the command starts: a value
// a variable does not take is refused with one sentence naming it (exit 2) before any file is
// written, not in the middle of a run. Leaves out the variables' meanings (their readers).
#pragma once

namespace sb::cli {

// UserError naming the first variable set to a value it does not take.
void check_environment();

}  // namespace sb::cli
