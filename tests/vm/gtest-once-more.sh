# Sourced by the variant guests (POSIX sh): gtest_once_more LABEL BINARY FILTER runs the gtest
# BINARY on FILTER; when at most 3 tests fail, runs those once more, alone, and names them in an
# "== LABEL: FLAKY" line when they pass then (scripts/test.sh gathers those lines). Returns
# non-zero when a test failed twice, or more than 3 failed. Same rule as scripts/ctest-retry.sh:
# the emulated CPU shares the host with the whole CI, so a test that failed once under that load
# is named, not allowed to drop every other result of the run.
gtest_once_more() {
  label=$1
  binary=$2
  filter=$3
  out=$(mktemp)
  { "$binary" --gtest_brief=1 --gtest_color=no --gtest_filter="$filter" --gtest_output="json:$out.json"
    echo $? >"$out.rc"; } 2>&1 | tee "$out"
  rc=$(cat "$out.rc")
  # Where the set's time went under emulation: its ten slowest tests.
  python3 - "$out.json" "$label" <<'PY' || true
import json, sys
tests = [(float(t.get("time", "0s").rstrip("s")), s["name"] + "." + t["name"])
         for s in json.load(open(sys.argv[1]))["testsuites"] for t in s["testsuite"]]
print("== %s: %d tests, %.0f s; slowest: %s" % (sys.argv[2], len(tests), sum(t for t, _ in tests),
      ", ".join("%s %.1f s" % (n, t) for t, n in sorted(tests, reverse=True)[:10])))
PY
  rm -f "$out.json"
  failed_tests=$(sed -n 's/^\[  FAILED  \] \([A-Za-z_][A-Za-z0-9_/]*\.[A-Za-z0-9_/]*\).*/\1/p' "$out" | sort -u)
  rm -f "$out" "$out.rc"
  [ "$rc" -eq 0 ] && return 0
  count=$(printf "%s\n" "$failed_tests" | grep -c .)
  if [ "$count" -eq 0 ] || [ "$count" -gt 3 ]; then
    echo "== $label: $count test(s) failed; not run again"
    return 1
  fi
  again=$(printf "%s\n" "$failed_tests" | paste -sd:)
  echo "== $label: running again, alone: $again"
  if "$binary" --gtest_brief=1 --gtest_color=no --gtest_filter="$again"; then
    echo "== $label: FLAKY (failed once, passed the second time): $again"
    return 0
  fi
  return 1
}
