#!/usr/bin/env bash
# Image builds: the same Dockerfile built cold (no cache) and cached (everything cached) by
# sandcell and by `buildah bud --layers`, in one hyperfine run; then a check that running an
# image a second time unpacks nothing.
#
#   bench/build.sh [BUILD]     (root; BUILD defaults to build/default; RUNS=10; OUT=DIR also
#                              keeps hyperfine's JSON there as build.json)
#
# Targets (issue "Images"): cached rebuild <= 0.1 s; cold build <= 0.7x buildah.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build/default}}
SANDCELL=$(realpath "$BUILD/cli/sandcell")
RUNS=${RUNS:-10}
[ "$(id -u)" -eq 0 ] || { echo "build.sh: run as root" >&2; exit 1; }
for tool in hyperfine buildah; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ -x "$SANDCELL" ] || { echo "build.sh: build first (cmake --build --preset default)" >&2; exit 1; }

work=$(mktemp -d /tmp/sandcell-bench-build.XXXXXX)
trap 'buildah --storage-driver vfs rmi -f bench-build:1 >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p "$work/ctx"
cp "$BUILD/test-rootfs/bin/busybox" "$work/ctx/busybox"
cat > "$work/ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /tmp /data && for i in $(seq 1 200); do echo "line $i" >> /data/log; done
ENV APP=bench
WORKDIR /data
RUN wc -l log > count
CMD ["cat", "count"]
DOCKERFILE
export SANDCELL_ROOT="$work/store"
buildah_build="buildah --storage-driver vfs bud --layers -q -t bench-build:1 $work/ctx"

# One --prepare per command: cold runs start from an empty store/cache, cached runs from a full one.
"$SANDCELL" build -q -t bench:1 "$work/ctx" >/dev/null 2>&1
$buildah_build >/dev/null 2>&1
json_opt=()
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && json_opt=(--export-json "$(realpath "$OUT")/build.json")
hyperfine --warmup 1 --runs "$RUNS" --export-markdown "$work/build.md" "${json_opt[@]}" \
  -n "sandcell cold" --prepare "rm -rf $work/store" \
  -n "buildah cold" --prepare "buildah --storage-driver vfs rmi -af" \
  -n "sandcell cached" --prepare "$SANDCELL build -q -t bench:1 $work/ctx" \
  -n "buildah cached" --prepare "$buildah_build" \
  "$SANDCELL build -q -t bench:1 $work/ctx" "$buildah_build" \
  "$SANDCELL build -q -t bench:1 $work/ctx" "$buildah_build" >/dev/null 2>&1
cat "$work/build.md"

# A second run of the image must not unpack again: layers/ is unchanged by it.
"$SANDCELL" run bench:1 >/dev/null
before=$(find "$SANDCELL_ROOT/layers" -mindepth 1 -maxdepth 1 | sort | md5sum)
"$SANDCELL" run bench:1 >/dev/null
after=$(find "$SANDCELL_ROOT/layers" -mindepth 1 -maxdepth 1 | sort | md5sum)
[ "$before" = "$after" ] && echo "second run of the image: no layer unpacked (layers/ unchanged)" \
  || echo "second run of the image: layers/ CHANGED"
