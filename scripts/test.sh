#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for a developer or CI: install everything (idempotent), build, run every test.
# Extra arguments go to ctest (e.g. -L kernels). Tests run side by side on every core: each test
# that runs ranks or threads on both cores says PROCESSORS 2 and runs alone on a two-core machine;
# unit tests run two at a time (tests/CMakeLists.txt, sb_finish_directory_tests).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
ctest --preset release -j "$(nproc)" "$@"
