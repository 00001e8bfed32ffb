#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for a new user: install everything (idempotent), build, run the default suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
./build/scalebench run "$@"
