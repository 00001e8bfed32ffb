#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for a developer or CI: install everything (idempotent), build, run every test.
# Extra arguments go to ctest (e.g. -L kernels).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
ctest --preset release -j1 "$@"
