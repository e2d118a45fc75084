#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs each for SECONDS
# (default 15; CI uses this default). The seed is fixed (FUZZ_SEED, default 1) so CI explores the
# same inputs on every run; fuzz longer, or with other seeds, by hand to find new bugs. Seeds come
# from tests/fuzz/corpus/<target>/; inputs that found new coverage are kept in
# build/fuzz/work/<target>/new/ (copy good ones into the seed corpus by hand). A crash stops the
# script with the reproducer's path: fix the bug, then commit the input to
# tests/fuzz/regressions/<target>/ under a name that says what it broke (unit.FuzzReplay.* replays
# every corpus and regression input in the default and ASan test runs).
#
# Examples:
#   scripts/fuzz.sh                       # every target, 15 s each
#   scripts/fuzz.sh 600 layer_extract     # one target for ten minutes
#   build/fuzz/tests/fuzz/fuzz_dockerfile crash-1234   # replay one input
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-15}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(dockerfile seccomp_profile layer_extract proxy_request host_name image_json code_request oci_config mcp_request
  http_request)
case "$seconds" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, got '$seconds'" >&2; exit 2 ;; esac

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

for target in "${targets[@]}"; do
  binary=$root/build/fuzz/tests/fuzz/fuzz_$target
  [ -x "$binary" ] || { echo "fuzz.sh: no fuzz target '$target'" >&2; exit 2; }
  # Relative paths in a work directory of its own: fuzz_layer_extract chroots into a jail where
  # only its working directory is visible.
  work=$root/build/fuzz/work/$target
  rm -rf "$work/seeds"
  mkdir -p "$work/new"
  cp -r "$root/tests/fuzz/corpus/$target" "$work/seeds"
  echo "== fuzz_$target: ${seconds}s"
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        LSAN_OPTIONS=suppressions=$root/tests/fuzz/lsan-suppressions.txt \
        "$binary" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=./ new seeds >"$work/log" 2>&1); then
    tail -n 40 "$work/log" >&2
    echo "fuzz.sh: fuzz_$target found a crash; reproducer: $(ls -t "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$work/log" | tr '\n' ' '
  echo
done
