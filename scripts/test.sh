#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds the `default` preset, runs every test
# (unit, integration and hostile as root on the real kernel, then the host-clean check) with
# CTest; then the same tests built with ASan + UBSan (the `asan` preset), then every libFuzzer
# target for a bounded time (scripts/fuzz.sh). Arguments go to the first ctest run only.
#
# SANDCELL_SKIP_ASAN=1 / SANDCELL_SKIP_FUZZ=1 skip those stages (for a quick local run);
# SANDCELL_FUZZ_SECONDS sets the time per fuzz target (default 15).
set -euo pipefail
cd "$(dirname "$0")/.."

stage() { echo "== test.sh: $1 ($(date +%T))"; }

bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
# Serial: integration tests assert on host-wide state (cgroups, processes) between runs.
stage "default preset"
ctest --preset default --timeout 600 "$@"

if [ "${SANDCELL_SKIP_ASAN:-}" != 1 ]; then
  stage "asan preset"
  bash scripts/test-asan.sh
fi
if [ "${SANDCELL_SKIP_FUZZ:-}" != 1 ]; then
  stage "fuzzers"
  bash scripts/fuzz.sh "${SANDCELL_FUZZ_SECONDS:-15}"
fi
stage "done"
