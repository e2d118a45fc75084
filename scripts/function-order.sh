#!/usr/bin/env bash
# Rewrites cli/sandcell.order: the functions the lean `sandcell` calls in a run, in the order of
# their first call. lld places them first in .text (cli/CMakeLists.txt), so a run touches a
# small, contiguous part of the program: each page fault maps the 64 KiB around it, and with
# those functions spread over the whole text a run mapped nearly all of it (bench/README.md,
# "Session 17"). Run it after changing what a run executes; a stale order only costs time
# (functions missing from it land in the cold part; names that no longer exist are ignored).
#
#   sudo scripts/function-order.sh [BUILD_DIR]      # default: build/default, built already
#
# Needs root (the runs make sandboxes) and a C compiler. Each command line below runs once
# under scripts/function-order/first_calls.c, which follows the supervisor, the sandbox's init
# and every other process of the program; the program's own output goes to stderr.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build/default}")
sandcell=$build/cli/sandcell
rootfs=$build/test-rootfs
order=$repo/cli/sandcell.order

die() { echo "function-order: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (the runs make sandboxes)"
[ -x "$sandcell" ] || die "$sandcell not built: cmake --build --preset default"
[ -d "$rootfs" ] || die "$rootfs not built: cmake --build $build --target test-rootfs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/first_calls" "$repo/scripts/function-order/first_calls.c"

# Function symbols with a size (offsets from the load address: it is a PIE) and their names.
nm --defined-only -S "$sandcell" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ && $2 !~ /^0+$/ { print $1 }' |
  sort -u > "$work/offsets"
nm --defined-only "$sandcell" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $1, $3 }' > "$work/names"

trace() {  # trace NAME ARGS...: one command line of sandcell under first_calls
  local name=$1
  shift
  "$work/first_calls" "$work/offsets" "$sandcell" "$@" > "$work/calls-$name" 2> "$work/err-$name" < /dev/null ||
    true # the failing command lines fail on purpose
  [ -s "$work/calls-$name" ] || die "no calls recorded for $name: $(tail -3 "$work/err-$name")"
}
# The commonest run first (its order is the layout's backbone), then what other runs add.
trace true run --rootfs "$rootfs" -- /bin/true
trace limits run --rootfs "$rootfs" --memory 100m --pids 10 --cpus 0.5 --env A=B --workdir /tmp \
  --hostname box --timeout 5 --output-limit 64k -- /bin/echo hi
trace json run --rootfs "$rootfs" --json -- /bin/cat
trace report run --rootfs "$rootfs" --report "$work/report.json" --timeout 1 -- /bin/sleep 5
trace status run --rootfs "$rootfs" -- /bin/sh -c 'exit 3'
trace mounts run --rootfs "$rootfs" --mount /tmp:/mnt:ro --tmpfs /scratch -- /bin/true
SANDCELL_NETNS_POOL=0 trace nopool run --rootfs "$rootfs" -- /bin/true
(cd "$build" && trace relative run --rootfs test-rootfs -- /bin/true)  # a path made absolute
trace missing run --rootfs "$rootfs" -- /no/such/program
trace badroot run --rootfs /no/such/rootfs -- /bin/true

python3 - "$work" "$order" <<'PYEOF'
import collections, pathlib, sys
work, order = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
names = collections.defaultdict(list)
for line in (work / "names").read_text().splitlines():
    address, name = line.split(None, 1)
    names[int(address, 16)].append(name)
seen, lines = set(), []
for run in ["true", "limits", "json", "report", "status", "mounts", "nopool", "relative", "missing", "badroot"]:
    for line in (work / f"calls-{run}").read_text().split():
        address = int(line, 16)
        if address not in seen:
            seen.add(address)
            lines.extend(names[address])
header = [
    "# The functions a `sandcell run` calls, in the order of their first call: lld places them",
    "# first in .text (cli/CMakeLists.txt). Made by scripts/function-order.sh; do not edit.",
]
order.write_text("\n".join(header + lines) + "\n")
print(f"function-order: {len(seen)} functions ({len(lines)} names) -> {order}")
PYEOF
