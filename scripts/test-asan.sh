#!/usr/bin/env bash
# The tests built with ASan + UBSan (the `asan` preset), as CI runs them after the default preset
# (scripts/test.sh): every unit and integration test, the hostile C and shell programs included.
# Measured on the 2-core CI VM (while other builds shared it): 541 tests in 414 s, Images.* 165 s
# of it, NetworkPolicy.* 43 s, Registry.* 43 s. Arguments go to ctest.
#
# SANDCELL_ASAN_ALL=1 also runs the tests that need the skill images (skills.*, agent.*, the
# Python hostile programs). They reuse the default build's image store (build/default/test-store,
# which scripts/test.sh fills first; the build cache makes the fixture take seconds); they are not
# in CI because they drive the same runtime through the `sandcell code` executable, at the cost
# of a full `--target all` ASan build of the skills and agent test programs.
# Left out always, because they measure what a sanitizer changes on purpose: the supervisor's
# peak RSS (ASan's shadow memory and quarantine add tens of MiB) and the soak's RSS growth.
set -euo pipefail
cd "$(dirname "$0")/.."

never='MemoryStaysBounded|HundredMegabyteLine|Soak\.'
tests='^unit\.|^integration\.|^host_is_clean$'
if [ "${SANDCELL_ASAN_ALL:-}" = 1 ]; then
  tests='.'
  cmake --preset asan -DSANDCELL_TEST_STORE="$PWD/build/default/test-store"
  cmake --build --preset asan --target all
elif [ "${SANDCELL_ASAN_BUILT:-}" != 1 ]; then
  # The executables, the test rootfs and the unit and integration test programs (the `asan`
  # build preset lists them), not the skills and agent test programs nor the fuzz targets.
  # SANDCELL_ASAN_BUILT=1: scripts/test.sh built them already and builds the fuzz targets in
  # this tree meanwhile (one cmake at a time in a build tree).
  cmake --preset asan
  cmake --build --preset asan
fi
# Two at a time, as in scripts/test.sh (tests/ctest-lanes.cmake says which tests may overlap); a
# failed test once more alone (scripts/ctest-retry.sh).
bash scripts/ctest-retry.sh asan --timeout 600 --parallel "${SANDCELL_CTEST_JOBS:-2}" -R "$tests" -E "$never" "$@"
