#!/usr/bin/env bash
# Rewrites cli/sandcell.order and cli/sandcell-images.order: the functions `sandcell run` and
# `sandcell-images run IMAGE` / `code` call, in the order of their first call. lld places them
# first in .text (cli/CMakeLists.txt), so a run touches a small, contiguous part of the program:
# each page fault maps the 64 KiB around it, and with those functions spread over the whole
# text a run mapped nearly all of it (bench/README.md, "Session 17"). Run it after changing what
# a run executes; a stale order only costs time (functions missing from it land in the cold
# part; names that no longer exist are ignored), and LeanBinary.ARunMapsLittleOfTheProgramsText
# fails once sandcell's is far off.
#
#   scripts/function-order.sh [BUILD_DIR]      # as root; default build/default, built already
#
# sandcell-images' command lines use the test store's skill images (BUILD_DIR/test-store, made by
# the test suite); without them only sandcell's order is rewritten. Each command line runs once
# under scripts/function-order/first_calls.c, which follows every process of the program (the
# supervisor, the sandbox's init...); the programs' own output goes to a log.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build/default}")
rootfs=$build/test-rootfs
store=$build/test-store

die() { echo "function-order: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (the runs make sandboxes)"
for binary in sandcell sandcell-images; do
  [ -x "$build/cli/$binary" ] || die "$build/cli/$binary not built: cmake --build --preset default"
done
[ -d "$rootfs" ] || die "$rootfs not built: cmake --build $build --target test-rootfs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/first_calls" "$repo/scripts/function-order/first_calls.c"

# trace BINARY NAME ARGS...: one command line of build/cli/BINARY under first_calls, its first
# calls in $work/BINARY.NAME. The function symbols with a size are its breakpoints (offsets from
# the load address: the programs are PIEs).
trace() {
  local binary=$1 name=$2
  shift 2
  local program=$build/cli/$binary
  [ -s "$work/$binary.offsets" ] ||
    nm --defined-only -S "$program" |
    awk 'NF == 4 && $3 ~ /^[tTwW]$/ && $2 !~ /^0+$/ { print $1 }' | sort -u > "$work/$binary.offsets"
  # Some command lines fail on purpose; what counts is that calls were recorded.
  "$work/first_calls" "$work/$binary.offsets" "$program" "$@" > "$work/$binary.$name" \
    2>> "$work/log" < /dev/null || true
  [ -s "$work/$binary.$name" ] || die "no calls recorded for $binary $name (log: $(tail -3 "$work/log"))"
  echo "$name" >> "$work/$binary.runs"
}

# write_order BINARY ORDER_FILE: the names of the functions hit, run by run in the order traced
# (the first and commonest run is the layout's backbone, the others add what they call).
write_order() {
  python3 - "$work" "$1" "$2" "$build/cli/$1" <<'PYEOF'
import collections, pathlib, subprocess, sys
work, binary, order, program = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
names = collections.defaultdict(list)
nm = subprocess.run(["nm", "--defined-only", program], capture_output=True, text=True, check=True)
for line in nm.stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[1] in "tTwW":
        names[int(fields[0], 16)].append(fields[2])
seen, lines = set(), []
for run in (work / f"{binary}.runs").read_text().split():
    for word in (work / f"{binary}.{run}").read_text().split():
        address = int(word, 16)
        if address not in seen:
            seen.add(address)
            lines.extend(names[address])
header = [
    f"# The functions {binary} calls in its runs, in the order of their first call: lld places",
    "# them first in .text (cli/CMakeLists.txt). Made by scripts/function-order.sh; do not edit.",
]
order.write_text("\n".join(header + lines) + "\n")
print(f"function-order: {len(seen)} functions ({len(lines)} names) -> {order}")
PYEOF
}

trace sandcell true run --rootfs "$rootfs" -- /bin/true
trace sandcell limits run --rootfs "$rootfs" --memory 100m --pids 10 --cpus 0.5 --env A=B \
  --workdir /tmp --hostname box --timeout 5 --output-limit 64k -- /bin/echo hi
trace sandcell json run --rootfs "$rootfs" --json -- /bin/cat
trace sandcell report run --rootfs "$rootfs" --report "$work/report.json" --timeout 1 -- /bin/sleep 5
trace sandcell status run --rootfs "$rootfs" -- /bin/sh -c 'exit 3'
trace sandcell mounts run --rootfs "$rootfs" --mount /tmp:/mnt:ro --tmpfs /scratch -- /bin/true
SANDCELL_NETNS_POOL=0 trace sandcell nopool run --rootfs "$rootfs" -- /bin/true
(cd "$build" && trace sandcell relative run --rootfs test-rootfs -- /bin/true)  # made absolute
trace sandcell missing run --rootfs "$rootfs" -- /no/such/program
trace sandcell badroot run --rootfs /no/such/rootfs -- /bin/true
write_order sandcell "$repo/cli/sandcell.order"

images=("$build/cli/sandcell-images" --root "$store")
if ! "${images[@]}" images 2> /dev/null | grep -q '^sandcell/skill-python:'; then
  echo "function-order: no skill images in $store (the test suite builds them): cli/sandcell-images.order left as it is" >&2
  exit 0
fi
printf 'print(6 * 7)\n' > "$work/one.py"
printf 'echo hi\n' > "$work/one.sh"
trace sandcell-images code-python --root "$store" code --skill python "$work/one.py"
trace sandcell-images run-image --root "$store" run sandcell/skill-bash /bin/true
trace sandcell-images run-userns --root "$store" run --userns auto sandcell/skill-bash /bin/true
trace sandcell-images code-json --root "$store" code --skill bash --json "$work/one.sh"
trace sandcell-images images --root "$store" images
write_order sandcell-images "$repo/cli/sandcell-images.order"
