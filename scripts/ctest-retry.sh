#!/usr/bin/env bash
# ctest for scripts/test.sh and scripts/test-asan.sh: `ctest --preset PRESET ARGS...`, its output
# also kept in build/PRESET/ctest.log. When tests fail it prints, last (where a truncated CI log
# still shows it), each failed test's failure lines, then runs those tests once more, one at a
# time. A test that fails twice fails the run; one that passes the second time is named in a
# "FLAKY" line here and in build/flaky-tests.txt, and the run goes on: a CI box shared with the
# sanitizer build, the VM and the other test lane times things differently from any developer's,
# and a test that failed once under that load is a bug to find from that line, not a reason to
# drop every other result of the run. More than SANDCELL_RETRY_MAX (3) failures, or
# SANDCELL_CTEST_RETRY=0, fail at once.
#
# Usage: scripts/ctest-retry.sh PRESET [ctest arguments]
set -uo pipefail
cd "$(dirname "$0")/.."
preset=$1
shift
log=build/$preset/ctest.log
failed_list=build/$preset/Testing/Temporary/LastTestsFailed.log

mkdir -p "build/$preset"
ctest --preset "$preset" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && exit 0

# The failure lines of each failed test, from its output (ctest's output-on-failure block).
digest() {
  python3 - "$log" "$failed_list" <<'EOF'
import re, sys
log = open(sys.argv[1], errors="replace").read().splitlines()
try:
    names = [line.split(":", 1)[1] for line in open(sys.argv[2]).read().splitlines() if ":" in line]
except OSError:
    names = []
for name in names:
    print(f"--- {name}")
    start = next((i for i, l in enumerate(log) if re.search(r"Test +#\d+: " + re.escape(name) + r" \.+\s*\*\*\*", l)), None)
    if start is None:
        print("    (no output block: see the log above)")
        continue
    # From the first failure (gtest's "file:line: Failure", a sanitizer's report, ...) to the
    # end of the block, without gtest's banners; at most 40 lines of 300 characters.
    shown, failing = 0, False
    for line in log[start + 1:]:
        if re.match(r"\s+Start +\d+: |\s*\d+/\d+ Test +#", line) or shown >= 40:
            break
        failing = failing or re.search(r"Failure|ERROR|Sanitizer|runtime error|terminate|Exception|Timeout", line)
        if failing and line.strip() and not re.match(r"\[(==========|----------|  PASSED  )\]", line):
            print("    " + line[:300])
            shown += 1
EOF
}

count=$(grep -c . "$failed_list" 2>/dev/null || echo 0)
echo "== ctest-retry.sh: $count test(s) failed in preset $preset; their failure lines:"
digest
if [ "${SANDCELL_CTEST_RETRY:-1}" = 0 ] || [ "$count" -eq 0 ] || [ "$count" -gt "${SANDCELL_RETRY_MAX:-3}" ]; then
  echo "== ctest-retry.sh: not run again (SANDCELL_CTEST_RETRY=${SANDCELL_CTEST_RETRY:-1}, at most ${SANDCELL_RETRY_MAX:-3} are)"
  exit "$status"
fi
names=$(cut -d: -f2- "$failed_list" | paste -sd' ')
echo "== ctest-retry.sh: running them again, one at a time: $names"
if ctest --preset "$preset" --rerun-failed --parallel 1 --timeout 600; then
  for name in $names; do echo "$preset $name" >>build/flaky-tests.txt; done
  echo "== ctest-retry.sh: FLAKY (failed once, passed the second time): $names"
  exit 0
fi
echo "== ctest-retry.sh: failed again: $(cut -d: -f2- "$failed_list" | paste -sd' ')"
exit 1
