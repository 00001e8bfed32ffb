#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds scalebench (Release preset) into build/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
