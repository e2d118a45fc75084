#!/usr/bin/env bash
# Benchmark (not a test): the Docker Engine API (issue 28, item 8). The same client calls against
#   sandcell   `sandcell serve --docker-api unix:SOCK` on the image store ROOT
#   podman     `podman system service` (Debian's podman, its Docker-compatible API, runc as its
#              runtime, cgroupfs manager, overlay storage of its own under a temporary directory)
# on the same image (IMAGE, loaded into podman's storage from a `sandcell save` of it):
#   run        `docker run --rm --network none IMAGE true` (the docker CLI: create, attach, start,
#              wait, remove), timed start to exit by bench/interleave.py, interleaved
#   exec       docker-py `container.exec_run(["python3", "-c", "print(1)"])` on a long-lived
#              container of each server (`sleep infinity`, network none), interleaved round by round
#   wait       docker-py `api.wait(id)` on a `sleep infinity` container: the time from `kill` to
#              wait's answer; with SUPERVISOR_KILL=1 for sandcell also from a SIGKILL of the
#              container's supervisor (the API server then notices the death itself; what the
#              killed runs leave, their cgroups, needs a `sandcell gc`, which is host-wide: hence
#              off by default, and the script then runs it with an empty --root of its own)
# and prints medians and the ratio sandcell/podman with the issue's goals (run <= 0.2x,
# exec <= 0.3x). The client calls are the same for both; podman's containers.conf gives its
# containers nofile and nproc 1024 (its defaults, 1048576, exceed what root here may set, and runc
# then refuses to start); sandcell's keep its own defaults.
# Nothing of the host's podman is used: storage, run root and tmpdir are under the temporary
# directory, events off; the script removes its containers, stops both servers by PID, unmounts
# what podman left under its directory and removes the cgroup parent podman made, if it made it.
#
# Usage: sudo bench/docker_api.sh [BUILD_DIR]
# Environment: ROOT (image store; default the build's SANDCELL_TEST_STORE, else $BUILD/test-store),
#   IMAGE (sandcell/skill-python:latest; needs python3), ROUNDS (20), WARMUP (2),
#   OUT (directory for docker_api.json; default $BUILD/bench), SUPERVISOR_KILL (0)
set -euo pipefail

die() {
  echo "bench/docker_api.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/store.sh
. "$HERE/store.sh"
ROOT=${ROOT:-$(test_store "$BUILD")}
IMAGE=${IMAGE:-sandcell/skill-python:latest}
ROUNDS=${ROUNDS:-20}
WARMUP=${WARMUP:-2}
OUT=${OUT:-$BUILD/bench}
SUPERVISOR_KILL=${SUPERVISOR_KILL:-0}
SANDCELL=$BUILD/cli/sandcell

[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in docker podman runc python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh: docker.io, podman, runc)"
done
python3 -c 'import docker' 2>/dev/null || die "missing docker-py (scripts/install-deps.sh: python3-docker)"
[ -x "$SANDCELL" ] || die "$SANDCELL not built (cmake --build --preset default)"
SANDCELL=$(realpath "$SANDCELL")
"$SANDCELL" --root "$ROOT" images | grep -q "^${IMAGE} " ||
  die "$IMAGE is not in $ROOT (sandcell --root $ROOT skills build python)"
mkdir -p "$OUT"

TMP=$(mktemp -d /tmp/sandcell-bench-docker.XXXXXX)
SC_SOCK=$TMP/sandcell.sock
PM_SOCK=$TMP/podman.sock
SC_PID=
PM_PID=
PARENT_MADE=
[ -d /sys/fs/cgroup/memory/libpod_parent ] || [ -d /sys/fs/cgroup/libpod_parent ] || PARENT_MADE=1
cleanup() {
  for sock in "$SC_SOCK" "$PM_SOCK"; do
    [ -S "$sock" ] || continue
    ids=$(DOCKER_HOST=unix://$sock docker ps -aq --filter label=sandcell-bench=docker-api 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$ids" ] || DOCKER_HOST=unix://$sock docker rm -f $ids >/dev/null 2>&1 || true
  done
  for pid in $SC_PID $PM_PID; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $SC_PID $PM_PID; do wait "$pid" 2>/dev/null || true; done
  # podman's exec sessions leave a conmon each that sleeps exit_command_delay (300 s) before its
  # cleanup command: this service's, found by the storage path on their command lines.
  for procs in /sys/fs/cgroup/memory/libpod_parent/conmon/cgroup.procs /sys/fs/cgroup/libpod_parent/conmon/cgroup.procs; do
    [ -f "$procs" ] || continue
    while read -r pid; do
      tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$TMP/" && kill -KILL "$pid" 2>/dev/null || true
    done <"$procs"
  done
  sleep 0.2
  { grep -F " $TMP/" /proc/self/mountinfo || true; } | awk '{print $5}' | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if [ -n "$PARENT_MADE" ]; then
    for d in /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/libpod_parent; do
      [ -d "$d" ] || continue
      find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
      rmdir "$d" 2>/dev/null || true
    done
  fi
  # The killed supervisors' runs (SUPERVISOR_KILL=1): gc with a store of its own, so the image
  # store's temporaries are not its business.
  [ "$SUPERVISOR_KILL" != 1 ] || "$SANDCELL" --root "$TMP/gc-root" gc >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for() {  # SOCKET NAME LOG
  for _ in $(seq 300); do
    DOCKER_HOST=unix://$1 docker version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "$2 did not answer on $1: $(tail -5 "$3")"
}

cat >"$TMP/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
EOF
PODMAN=(podman --root "$TMP/podman/root" --runroot "$TMP/podman/runroot" --tmpdir "$TMP/podman/tmp"
        --runtime "$(command -v runc)" --cgroup-manager cgroupfs --events-backend none --storage-driver overlay)
CONTAINERS_CONF=$TMP/containers.conf "${PODMAN[@]}" system service --time 0 "unix://$PM_SOCK" \
  >"$TMP/podman.log" 2>&1 &
PM_PID=$!
"$SANDCELL" --root "$ROOT" serve --docker-api "unix:$SC_SOCK" >"$TMP/sandcell.log" 2>&1 &
SC_PID=$!
wait_for "$PM_SOCK" podman "$TMP/podman.log"
wait_for "$SC_SOCK" sandcell "$TMP/sandcell.log"

echo "loading $IMAGE into podman's storage (sandcell save | docker load)..." >&2
"$SANDCELL" --root "$ROOT" save -o "$TMP/image.tar" "$IMAGE"
DOCKER_HOST=unix://$PM_SOCK docker load -q -i "$TMP/image.tar" >/dev/null
rm -f "$TMP/image.tar"

RUN="docker run --rm --network none --label sandcell-bench=docker-api $IMAGE true"
echo "== docker run --rm $IMAGE true: $ROUNDS rounds, interleaved; load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$HERE/interleave.py" --rounds "$ROUNDS" --warmup "$WARMUP" --json "$TMP/run.json" \
  "sandcell=DOCKER_HOST=unix://$SC_SOCK $RUN" "podman=DOCKER_HOST=unix://$PM_SOCK $RUN"

echo "== docker-py exec_run python3 -c 'print(1)': $ROUNDS rounds, interleaved"
python3 - "$SC_SOCK" "$PM_SOCK" "$IMAGE" "$ROUNDS" "$WARMUP" "$TMP/exec.json" <<'EOF'
import json, statistics, sys, time
import docker

sc_sock, pm_sock, image, rounds, warmup, out = sys.argv[1:7]
rounds, warmup = int(rounds), int(warmup)
servers = {"sandcell": sc_sock, "podman": pm_sock}
containers = {}
try:
    for name, sock in servers.items():
        client = docker.DockerClient(base_url="unix://" + sock, version="auto")
        containers[name] = client.containers.run(
            image, ["sleep", "infinity"], detach=True, network_mode="none",
            labels={"sandcell-bench": "docker-api"})
    times = {name: [] for name in servers}
    names = list(servers)
    for r in range(warmup + rounds):
        for name in names[r % 2:] + names[:r % 2]:
            start = time.perf_counter()
            code, output = containers[name].exec_run(["python3", "-c", "print(1)"])
            ms = (time.perf_counter() - start) * 1000
            if code != 0 or output != b"1\n":
                sys.exit(f"{name}: exec_run gave {code} {output!r}")
            if r >= warmup:
                times[name].append(ms)
    summary = {n: {"median": statistics.median(t), "p90": sorted(t)[round(0.9 * (len(t) - 1))],
                   "min": min(t)} for n, t in times.items()}
    print(f"{'server':<10} {'median':>8} {'p90':>8} {'min':>8}  (ms)")
    for n, s in summary.items():
        print(f"{n:<10} {s['median']:8.2f} {s['p90']:8.2f} {s['min']:8.2f}")
    with open(out, "w") as f:
        json.dump({"rounds": rounds, "summary": summary, "times_ms": times}, f, indent=1)
finally:
    for c in containers.values():
        c.remove(force=True)
EOF

echo "== docker-py wait() answered after kill(): $ROUNDS rounds, interleaved"
python3 - "$SC_SOCK" "$PM_SOCK" "$IMAGE" "$ROUNDS" "$WARMUP" "$TMP/wait.json" "$SUPERVISOR_KILL" <<'EOF'
import json, os, signal, statistics, sys, threading, time
import docker

sc_sock, pm_sock, image, rounds, warmup, out, supervisor_kill = sys.argv[1:8]
rounds, warmup = int(rounds), int(warmup)
clients = {"sandcell": docker.DockerClient(base_url="unix://" + sc_sock, version="auto"),
           "podman": docker.DockerClient(base_url="unix://" + pm_sock, version="auto")}
# (series, client, how the container is ended)
series = [("sandcell kill", "sandcell", "api"), ("podman kill", "podman", "api")]
if supervisor_kill == "1":
    series.append(("sandcell supervisor SIGKILL", "sandcell", "supervisor"))
times = {name: [] for name, _, _ in series}

def one(client, how):
    c = clients[client].containers.run(image, ["sleep", "infinity"], detach=True, network_mode="none",
                                       labels={"sandcell-bench": "docker-api"})
    try:
        result = {}
        waiter = threading.Thread(target=lambda: result.update(clients[client].api.wait(c.id)))
        waiter.start()
        time.sleep(0.3)  # the wait request is in (a benchmark, not a test)
        start = time.perf_counter()
        if how == "api":
            c.kill()
        else:
            c.reload()
            os.kill(c.attrs["State"]["Pid"], signal.SIGKILL)  # sandcell's State.Pid: the supervisor
        waiter.join()
        ms = (time.perf_counter() - start) * 1000
        if result.get("StatusCode") != 137:
            sys.exit(f"{client} {how}: wait gave {result!r}")
        return ms
    finally:
        c.remove(force=True)

for r in range(warmup + rounds):
    order = series[r % len(series):] + series[:r % len(series)]
    for name, client, how in order:
        ms = one(client, how)
        if r >= warmup:
            times[name].append(ms)
summary = {n: {"median": statistics.median(t), "p90": sorted(t)[round(0.9 * (len(t) - 1))], "min": min(t)}
           for n, t in times.items()}
print(f"{'series':<28} {'median':>8} {'p90':>8} {'min':>8}  (ms, kill sent to wait answered)")
for n, s in summary.items():
    print(f"{n:<28} {s['median']:8.2f} {s['p90']:8.2f} {s['min']:8.2f}")
with open(out, "w") as f:
    json.dump({"rounds": rounds, "summary": summary, "times_ms": times}, f, indent=1)
EOF

python3 - "$TMP/run.json" "$TMP/exec.json" "$OUT/docker_api.json" "$IMAGE" "$TMP/wait.json" <<'EOF'
import json, sys
run, exe = (json.load(open(p)) for p in sys.argv[1:3])
wait = json.load(open(sys.argv[5]))
rows = []
for what, data, goal in (("docker run --rm true", run, 0.2), ("docker-py exec_run print(1)", exe, 0.3)):
    sc, pm = data["summary"]["sandcell"]["median"], data["summary"]["podman"]["median"]
    ratio = sc / pm
    rows.append({"what": what, "sandcell_ms": sc, "podman_ms": pm, "ratio": ratio, "goal": goal,
                 "met": ratio <= goal})
print(f"\n{'':<30} {'sandcell':>9} {'podman':>9} {'ratio':>7} {'goal':>6}")
for r in rows:
    print(f"{r['what']:<30} {r['sandcell_ms']:9.1f} {r['podman_ms']:9.1f} {r['ratio']:7.3f} "
          f"{r['goal']:6.2f}  {'met' if r['met'] else 'NOT met'}")
json.dump({"image": sys.argv[4], "rows": rows, "run": run["summary"], "exec": exe["summary"],
           "wait_after_kill": wait["summary"]},
          open(sys.argv[3], "w"), indent=1)
EOF
