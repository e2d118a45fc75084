#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds the `default` preset, runs every test
# (unit, integration and hostile as root on the real kernel, then the host-clean check) with
# CTest; then the same tests built with ASan + UBSan (the `asan` preset), then every libFuzzer
# target over a fixed, seeded set of inputs (`scripts/fuzz.sh ci`: the same inputs on every
# machine). Arguments go to the first ctest run only.
#
# SANDCELL_SKIP_ASAN=1 / SANDCELL_SKIP_FUZZ=1 skip those stages (for a quick local run);
# SANDCELL_FUZZ_SECONDS=N fuzzes each target for N seconds instead (exploring, not reproducible).
set -euo pipefail
cd "$(dirname "$0")/.."

stage() { echo "== test.sh: $1 ($(date +%T))"; }

bash scripts/install-deps.sh
cmake --preset default
# The skill images (the `skill_images` CTest fixture: debootstrap, then apt-get in image builds)
# wait mostly on the Debian mirror and on dpkg, so they are made while the rest compiles: the
# executables first, then the images in the background. The fixture finds them built.
stage "sandcell executables"
cmake --build --preset default --target sandcell sandcell-net sandcell-images
store=build/default/test-store
stage "skill images (background, log: $store.log)"
bash tests/fixtures/make-skill-images.sh build/default/cli/sandcell "$store" >"$store.log" 2>&1 &
images=$!
stage "everything else"
cmake --build --preset default
stage "waiting for the skill images"
if ! wait "$images"; then
  cat "$store.log"
  echo "test.sh: building the skill images failed" >&2
  exit 1
fi
cat "$store.log"
# Serial: integration tests assert on host-wide state (cgroups, processes) between runs.
stage "default preset"
ctest --preset default --timeout 600 "$@"

if [ "${SANDCELL_SKIP_ASAN:-}" != 1 ]; then
  stage "asan preset"
  bash scripts/test-asan.sh
fi
if [ "${SANDCELL_SKIP_FUZZ:-}" != 1 ]; then
  stage "fuzzers"
  bash scripts/fuzz.sh "${SANDCELL_FUZZ_SECONDS:-ci}"
fi
stage "done"
