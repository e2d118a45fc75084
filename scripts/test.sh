#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds the `default` preset, runs every test
# (unit, integration as root on the real kernel, then the host-clean check) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
# Serial: integration tests assert on host-wide state (cgroups, processes) between runs.
ctest --preset default --timeout 600 "$@"
