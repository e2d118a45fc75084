#!/usr/bin/env bash
# The unit, integration and hostile tests built with ASan + UBSan (the `asan` preset), as CI runs
# them after the default preset (scripts/test.sh). Arguments go to ctest.
#
# Excluded, because they measure what a sanitizer changes on purpose rather than what the code
# does: tests that bound the supervisor's peak RSS (ASan's shadow memory and quarantine add tens
# of MiB) and the soak's RSS-growth check (the quarantine holds freed memory).
set -euo pipefail
cd "$(dirname "$0")/.."

excluded='RSS|Rss|MemoryStaysBounded|HundredMegabyteLine|Soak\.'
cmake --preset asan
cmake --build --preset asan
ctest --preset asan --timeout 600 -E "$excluded" "$@"
