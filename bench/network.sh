#!/usr/bin/env bash
# Benchmark (not a test) of the network policy (docs/architecture.md, "Network policy"):
#   1. start-to-exit time of /bin/true with --net none, --net allow:bench.test over both transports
#      (socket: the default, no link; veth) and --net full over veth (only when IPv4 forwarding is
#      already on: sandcell never turns it on) and slirp4netns (when installed; /bin/true sends
#      nothing, so nothing reaches the uplink), in ONE hyperfine run; the extra cost of each over
#      none (target <= 5 ms) and the ratio to none.
#   2. proxy throughput over each allow transport: a SIZE_MB download (default 100) by busybox wget inside an allow: sandbox,
#      through sandcell's proxy, from a busybox httpd in a network namespace this script makes
#      (198.51.100.0/24, TEST-NET-2, mapped to bench.test with --net-hosts). For reference the same
#      download from the host without a sandbox or proxy. Nothing is sent to the machine's uplink.
#
# Usage: sudo bench/network.sh [BUILD_DIR]
# Environment: BUILD (default build/default), ROOTFS ($BUILD/test-rootfs), RUNS (30), WARMUP (3),
#              SIZE_MB (100), OUT (a directory: hyperfine's JSON and the throughputs are also kept
#              there as network.json).
set -euo pipefail

die() {
  echo "bench/network.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
ROOTFS=${ROOTFS:-$BUILD/test-rootfs}
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
SIZE_MB=${SIZE_MB:-100}
SANDCELL=$BUILD/cli/sandcell

[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in hyperfine ip busybox python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh)"
done
[ -x "$SANDCELL" ] || die "$SANDCELL not found: cmake --build $BUILD --target sandcell"
[ -d "$ROOTFS" ] || die "rootfs $ROOTFS not found: cmake --build $BUILD --target test-rootfs"
SANDCELL=$(realpath "$SANDCELL")
ROOTFS=$(realpath "$ROOTFS")

# ---- the test "internet": one namespace, one veth, one httpd ---------------------------------------
suffix=$(printf '%06x' $((RANDOM * 32768 + RANDOM)) | tail -c 6)
NS=scbench-$suffix
HOST_LINK=scb${suffix}h
NS_LINK=scb${suffix}n
WORK=$(mktemp -d /tmp/scbench.XXXXXX)
HTTPD_PID=
cleanup() {
  if [ -n "$HTTPD_PID" ]; then kill "$HTTPD_PID" 2>/dev/null || true; wait "$HTTPD_PID" 2>/dev/null || true; fi
  ip link del "$HOST_LINK" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NS"
ip link add "$HOST_LINK" type veth peer name "$NS_LINK" netns "$NS"
ip addr add 198.51.100.1/24 dev "$HOST_LINK"
ip link set "$HOST_LINK" up
ip -n "$NS" link set lo up
ip -n "$NS" addr add 198.51.100.10/24 dev "$NS_LINK"
ip -n "$NS" link set "$NS_LINK" up
mkdir -p "$WORK/www"
echo ok >"$WORK/www/index.html"
truncate -s "${SIZE_MB}M" "$WORK/www/big"
echo "198.51.100.10 bench.test" >"$WORK/hosts"
ip netns exec "$NS" busybox httpd -f -p 198.51.100.10:80 -h "$WORK/www" &
HTTPD_PID=$!
for _ in $(seq 50); do busybox wget -q -O /dev/null http://198.51.100.10/ 2>/dev/null && break; sleep 0.1; done

# ---- 1. start-to-exit ------------------------------------------------------------------------------
RUN="$SANDCELL run --rootfs $ROOTFS"
ALLOW="$RUN --net allow:bench.test --net-hosts $WORK/hosts"
commands=(-n none "$RUN --net none -- /bin/true"
          -n allow-socket "$ALLOW --net-transport socket -- /bin/true"
          -n allow-veth "$ALLOW --net-transport veth -- /bin/true")
if [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ]; then
  commands+=(-n full-veth "$RUN --net full --net-transport veth -- /bin/true")
else
  echo "IPv4 forwarding is off: --net full over veth is not measured (sandcell refuses it rather than turn it on)"
fi
if command -v slirp4netns >/dev/null; then
  commands+=(-n full-slirp "$RUN --net full --net-transport slirp -- /bin/true")
else
  echo "slirp4netns is not installed: --net full over slirp4netns is not measured"
fi
for ((i = 2; i < ${#commands[@]}; i += 3)); do ${commands[$i]} >/dev/null || die "smoke test failed: ${commands[$i]}"; done
hyperfine -N --runs "$RUNS" --warmup "$WARMUP" --export-json "$WORK/start.json" "${commands[@]}"
python3 - "$WORK/start.json" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
none, none_median = results["none"]["mean"] * 1000, results["none"]["median"] * 1000
for name in ("allow-socket", "allow-veth", "full-veth", "full-slirp"):
    if name in results:
        mean, median = results[name]["mean"] * 1000, results[name]["median"] * 1000
        extra = mean - none
        print(f"--net {name}: mean {mean:.1f} ms, +{extra:.1f} ms over none ({none:.1f} ms), "
              f"x{mean / none:.2f}; median +{median - none_median:.1f} ms, x{median / none_median:.2f}"
              f" -> target <= 5 ms: {'met' if extra <= 5 else 'NOT met'}")
EOF

# ---- 2. proxy throughput ---------------------------------------------------------------------------
echo "measuring the download..."
direct_start=$(date +%s.%N)
busybox wget -q -O /dev/null http://198.51.100.10/big
direct_s=$(awk -v start="$direct_start" -v end="$(date +%s.%N)" 'BEGIN { print end - start }')
for transport in socket veth; do
  record=$($SANDCELL run --json --timeout 120 --rootfs "$ROOTFS" --net allow:bench.test --net-hosts "$WORK/hosts" \
    --net-transport $transport \
    -- sh -c 'read a _ </proc/uptime; wget -q -O /dev/null http://bench.test/big || exit 1; read b _ </proc/uptime; echo $a $b')
  python3 - "$record" "$direct_s" "$SIZE_MB" "$transport" "$WORK/throughput.jsonl" <<'EOF'
import json, sys
record, direct_s, size_mb, transport = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
assert record["status"] == "ok", record
start, end = map(float, record["stdout"].split())  # /proc/uptime: 10 ms resolution
proxied_s = max(end - start, 0.01)
print(f"{size_mb} MB through the proxy ({transport}): {proxied_s:.2f} s = {size_mb / proxied_s:.0f} MB/s "
      f"(direct from the host, no proxy: {direct_s:.2f} s = {size_mb / direct_s:.0f} MB/s)")
with open(sys.argv[5], "a") as out:
    out.write(json.dumps({"transport": transport, "size_mb": size_mb, "proxied_s": proxied_s,
                          "direct_s": direct_s}) + "\n")
EOF
done
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  python3 - "$WORK/start.json" "$WORK/throughput.jsonl" "$OUT/network.json" <<'EOF'
import json, sys
start = json.load(open(sys.argv[1]))
throughput = [json.loads(line) for line in open(sys.argv[2])]
json.dump({"start": start, "throughput": throughput}, open(sys.argv[3], "w"), indent=1)
EOF
fi
