#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS | ci] [TARGET...]
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs each target.
#
# `ci` (what scripts/test.sh runs): a fixed number of inputs per target (the table below, about
# ten seconds each on a 2-vCPU VM), seed FUZZ_SEED (default 1), from the committed seeds only,
# no corpus reloads, and without address-space randomisation (`setarch -R`: coverage of hash
# tables follows pointer values). For a single-threaded target that makes the run the same on
# every machine: CI fails when a change breaks one of those inputs, not because a machine got
# further in 15 seconds (time-bounded CI runs once found a crash that the same commit's run
# here had not). Measured: two runs gave the same coverage and corpus for every target but
# mcp_request, whose executor runs on threads.
#
# SECONDS (default 15): explore, for finding new bugs by hand; run long and with other seeds.
# Inputs that found new coverage are kept in build/asan/work/<target>/new/ (copy good ones
# into the seed corpus by hand).
#
# Seeds come from tests/fuzz/corpus/<target>/. A crash stops the script with the reproducer's
# path: fix the bug, then commit the input to tests/fuzz/regressions/<target>/ under a name
# that says what it broke (unit.FuzzReplay.* replays every corpus and regression input in the
# default and ASan test runs).
#
# Examples:
#   scripts/fuzz.sh ci                              # what CI runs
#   scripts/fuzz.sh 600 layer_extract               # one target for ten minutes
#   FUZZ_SEED=7 scripts/fuzz.sh 120                 # every target, another seed
#   build/asan/tests/fuzz/fuzz_dockerfile crash-1234   # replay one input
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Inputs per target in `ci` mode: ~60% of what 15 s ran in CI (2026-12-03), so ~10 s each.
declare -A ci_runs=([dockerfile]=40000 [seccomp_profile]=30000 [layer_extract]=8000
  [proxy_request]=400000 [host_name]=120000 [image_json]=25000 [code_request]=150000
  [oci_config]=30000 [mcp_request]=8000 [http_request]=15000)
# Largest input libFuzzer makes, for the targets whose seed corpus holds the hostile giants
# (a 277 KB config with 20000 Env entries, 100000-deep JSON): without a bound libFuzzer takes the
# largest seed as its limit and mutates 100-KB inputs, 350 inputs/s; 16 KB runs ~2500/s and
# reached 97% of that coverage (measured 2026-12-05). The giants still run whole in
# unit.FuzzReplay.*; here libFuzzer reads their first 16 KB.
declare -A max_len=([dockerfile]=16384 [image_json]=16384)

mode=${1:-15}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(dockerfile seccomp_profile layer_extract proxy_request host_name image_json code_request oci_config mcp_request
  http_request)
case "$mode" in
  ci) ;;
  '' | *[!0-9]*) echo "fuzz.sh: the first argument must be SECONDS or 'ci', got '$mode'" >&2; exit 2 ;;
esac

# SANDCELL_FUZZ_BUILT=1: scripts/test.sh built the tree already and runs the ASan tests in it
# meanwhile (one cmake at a time in a build tree).
if [ "${SANDCELL_FUZZ_BUILT:-}" != 1 ]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
fi

for target in "${targets[@]}"; do
  binary=$root/build/asan/tests/fuzz/fuzz_$target
  [ -x "$binary" ] || { echo "fuzz.sh: no fuzz target '$target'" >&2; exit 2; }
  # Relative paths in a work directory of its own: fuzz_layer_extract chroots into a jail where
  # only its working directory is visible.
  work=$root/build/asan/work/$target
  rm -rf "$work/seeds"
  if [ "$mode" = ci ]; then
    rm -rf "$work/new"  # the committed seeds only, so every machine starts alike
    bound=(-runs="${ci_runs[$target]}" -reload=0)
    fixed=(setarch "$(uname -m)" -R)
    echo "== fuzz_$target: ${ci_runs[$target]} inputs, seed ${FUZZ_SEED:-1}"
  else
    bound=(-max_total_time="$mode")
    fixed=()
    echo "== fuzz_$target: ${mode}s, seed ${FUZZ_SEED:-1}"
  fi
  [ -z "${max_len[$target]:-}" ] || bound+=(-max_len="${max_len[$target]}")
  mkdir -p "$work/new"
  cp -r "$root/tests/fuzz/corpus/$target" "$work/seeds"
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        LSAN_OPTIONS=suppressions=$root/tests/fuzz/lsan-suppressions.txt \
        "${fixed[@]}" "$binary" -seed="${FUZZ_SEED:-1}" "${bound[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=./ new seeds >"$work/log" 2>&1); then
    tail -n 40 "$work/log" >&2
    echo "fuzz.sh: fuzz_$target found a crash; reproducer: $(ls -t "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$work/log" | tr '\n' ' '
  echo
done
