#!/usr/bin/env bash
# Pull from a local registry: a ~200 MB image of four random (incompressible) layers, pushed by
# sandcell to Debian's docker-registry on 127.0.0.1, then pulled from scratch each run by
# `sandcell pull` (into an empty store: download, sha256, DiffID check of every layer) and by
# `skopeo copy docker://... oci:DIR` (into an empty OCI layout), in one hyperfine run.
#
#   bench/pull.sh [BUILD]     (root; BUILD defaults to build/default; RUNS=5, LAYER_MB=50; OUT=DIR
#                             also keeps hyperfine's JSON there as pull.json)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${BUILD:-build/default}}
SANDCELL=$(realpath "$BUILD/cli/sandcell")
RUNS=${RUNS:-5}
LAYER_MB=${LAYER_MB:-50}
[ "$(id -u)" -eq 0 ] || { echo "pull.sh: run as root" >&2; exit 1; }
for tool in hyperfine skopeo docker-registry python3; do
  command -v "$tool" >/dev/null || { echo "pull.sh: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ -x "$SANDCELL" ] || { echo "pull.sh: build first (cmake --build --preset default)" >&2; exit 1; }

work=$(mktemp -d /tmp/sandcell-bench-pull.XXXXXX)
registry_pid=""
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/registry.yml" <<YAML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
YAML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v2/')" 2>/dev/null && break
  sleep 0.1
done

# The image: FROM scratch, one COPY per random file, so one layer each.
mkdir -p "$work/ctx"
echo "FROM scratch" > "$work/ctx/Dockerfile"
for i in 1 2 3 4; do
  head -c "$((LAYER_MB * 1024 * 1024))" /dev/urandom > "$work/ctx/layer$i.bin"
  echo "COPY layer$i.bin /data/layer$i.bin" >> "$work/ctx/Dockerfile"
done
ref="127.0.0.1:$port/bench/big:1"
export SANDCELL_ROOT="$work/source"
"$SANDCELL" build -q -t big:1 "$work/ctx" >/dev/null 2>&1
"$SANDCELL" push -q big:1 "$ref" >/dev/null
rm -rf "$work/ctx" "$work/source"
size=$(du -sm "$work/registry" | cut -f1)
echo "image: 4 layers of $LAYER_MB MiB random data; registry storage ${size} MiB"

hyperfine --warmup 1 --runs "$RUNS" --export-markdown "$work/pull.md" --export-json "$work/pull.json" \
  -n "sandcell pull" --prepare "rm -rf $work/store" \
  -n "skopeo copy" --prepare "rm -rf $work/oci" \
  "$SANDCELL --root $work/store pull -q $ref" \
  "skopeo copy -q --src-tls-verify=false docker://$ref oci:$work/oci:big" >/dev/null
cat "$work/pull.md"
python3 - "$work/pull.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
s, k = r["sandcell pull"]["mean"], r["skopeo copy"]["mean"]
print(f"sandcell pull {s:.2f} s, skopeo copy {k:.2f} s: sandcell/skopeo = {s / k:.2f}")
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$work/pull.json" "$OUT/pull.json"; fi
