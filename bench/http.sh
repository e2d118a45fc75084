#!/usr/bin/env bash
# Benchmark (not a test): HTTP throughput and latency of `sandcell serve` under load, with
# Apache's `ab` (Debian's apache2-utils) as the load generator: python snippets POSTed to /v1/run
# at each concurrency of CONCURRENCY, against serve without a pool (every run cold) and with
# --pool python=POOL, and with --pool-zygote too (the pool's interpreters forked from one per
# skill: SERVERS="cold pool zygote"). Before each ab run the server rests REST seconds (its pool is full again);
# under load the pool drains and refills beside the requests, which is counted: "refill included".
# --max-running stays at its default (the CPU count), so requests beyond it queue.
# The floor under them, with no isolation at all (bench/floor_server.py, chroot'd into the skill
# image with its own python3): floor-exec starts a fresh interpreter per request, floor-fork forks
# one that imported the skill's preloads. What these reach bounds any runner that starts a
# process per request on this machine.
#
# Usage: sudo bench/http.sh [BUILD_DIR]
# Environment: ROOT (image store with the python skill; default the build's SANDCELL_TEST_STORE,
#   else $BUILD/test-store), CONCURRENCY ("1 8 32"), REQUESTS (requests per ab run, one per
#   concurrency: "40 96 160"), POOL (4), REST (4 s), SERVERS ("cold pool"; also: zygote,
#   floor-exec, floor-fork), OUT (directory for http.json; default $BUILD/bench), SNIPPETS
#   ("print": print(1); also numpy: a numpy snippet that prints 1, at NUMPY_CONCURRENCY ("1 8")
#   with NUMPY_REQUESTS ("24 64") requests), CODE (instead of print's print(1); its last line must
#   print 1, as "import numpy; print(numpy.ones(1).size)" does)
# Prints one line per snippet, server and concurrency: requests/s, mean, p50 and p99 in ms (from ab's
# per-request times, -g), and the count of non-2xx answers (must be 0). ab counts every answer whose length
# differs from the first as "failed (length)": the result records differ in their timings, so that
# count is not an error; the answers are checked by a request before and after instead.
set -euo pipefail

die() {
  echo "bench/http.sh: error: $*" >&2
  exit 1
}

BUILD=${1:-${BUILD:-build/default}}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/store.sh
. "$HERE/store.sh"
ROOT=${ROOT:-$(test_store "$BUILD")}
read -r -a CONCURRENCY <<<"${CONCURRENCY:-1 8 32}"
read -r -a REQUESTS <<<"${REQUESTS:-40 96 160}"
POOL=${POOL:-4}
REST=${REST:-4}
read -r -a SERVERS <<<"${SERVERS:-cold pool}"
read -r -a SNIPPETS <<<"${SNIPPETS:-print}"
read -r -a NUMPY_CONCURRENCY <<<"${NUMPY_CONCURRENCY:-1 8}"
read -r -a NUMPY_REQUESTS <<<"${NUMPY_REQUESTS:-24 64}"
OUT=${OUT:-$BUILD/bench}
CODE=${CODE:-print(1)}
NUMPY_CODE='import numpy as np; print(np.arange(10).sum() // 45)'
SANDCELL=$BUILD/cli/sandcell

[ "$(id -u)" -eq 0 ] || die "must run as root: sudo $0 $*"
for tool in ab python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (scripts/install-deps.sh: apache2-utils)"
done
[ ${#CONCURRENCY[@]} -eq ${#REQUESTS[@]} ] || die "CONCURRENCY and REQUESTS must have as many words"
[ ${#NUMPY_CONCURRENCY[@]} -eq ${#NUMPY_REQUESTS[@]} ] ||
  die "NUMPY_CONCURRENCY and NUMPY_REQUESTS must have as many words"
for snippet in "${SNIPPETS[@]}"; do
  case $snippet in print | numpy) ;; *) die "SNIPPETS: no snippet called '$snippet' (print, numpy)" ;; esac
done
[ -x "$SANDCELL" ] || die "$SANDCELL not built (cmake --build --preset default)"
SANDCELL=$(realpath "$SANDCELL")
skill_built "$SANDCELL" "$ROOT" python ||
  die "the python skill is not built in $ROOT (sandcell --root $ROOT skills build python)"

TMP=$(mktemp -d /tmp/sandcell-bench-http.XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if mountpoint -q "$TMP/chroot" 2>/dev/null; then umount "$TMP/chroot"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

body() {
  python3 -c 'import json, sys; print(json.dumps({"skill": "python", "code": sys.argv[1]}))' "$1"
}
body "$CODE" >"$TMP/body-print.json"
body "$NUMPY_CODE" >"$TMP/body-numpy.json"
for kind in "${SERVERS[@]}"; do
  case $kind in
    floor-*)
      # The skill image's files as its sandboxes see them, read-only, for the floor's chroot.
      mkdir "$TMP/chroot"
      mount -t overlay -o "ro,lowerdir=$(skill_layers "$SANDCELL" "$ROOT" sandcell/skill-python)" overlay "$TMP/chroot"
      preloads=$(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1])).get("preload", [])))' \
        "$HERE/../agent/skills/python/skill.json")
      break
      ;;
  esac
done
# One request per snippet, checked: status ok and stdout "1\n".
check() {
  python3 - "$1" "${SNIPPETS[@]/#/$TMP/body-}" <<'PY'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
for _ in range(1500):  # the server starts
    try:
        c.request("GET", "/v1/health"); c.getresponse().read(); break
    except OSError:
        import time; time.sleep(0.02); c.close()
for body in sys.argv[2:]:
    c.request("POST", "/v1/run", open(body + ".json", "rb").read(),
              {"Authorization": "Bearer bench", "Content-Type": "application/json"})
    r = json.loads(c.getresponse().read())
    if r.get("status") != "ok" or r.get("stdout") != "1\n":
        sys.exit(f"bench/http.sh: the server answered {r}")
PY
}

results=()
for kind in "${SERVERS[@]}"; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  flags=()
  case $kind in
    cold) ;;
    pool) flags=(--pool "python=$POOL") ;;
    zygote) flags=(--pool "python=$POOL" --pool-zygote) ;;
    floor-exec | floor-fork) ;;
    *) die "SERVERS: no server called '$kind' (cold, pool, zygote, floor-exec, floor-fork)" ;;
  esac
  if [ "${kind%%-*}" = floor ]; then
    # shellcheck disable=SC2086 # the preloads are words
    chroot "$TMP/chroot" /usr/bin/python3 -c "$(cat "$HERE/floor_server.py")" "$port" "${kind#floor-}" $preloads \
      2>"$TMP/serve-$kind.log" &
  else
    "$SANDCELL" --root "$ROOT" serve --listen "127.0.0.1:$port" --token bench "${flags[@]}" 2>"$TMP/serve-$kind.log" &
  fi
  server=$!
  check "$port" || die "$kind does not answer the snippets (log: $(tail -3 "$TMP/serve-$kind.log"))"
  for snippet in "${SNIPPETS[@]}"; do
    if [ "$snippet" = numpy ]; then
      levels=("${NUMPY_CONCURRENCY[@]}") counts=("${NUMPY_REQUESTS[@]}")
    else
      levels=("${CONCURRENCY[@]}") counts=("${REQUESTS[@]}")
    fi
    for i in "${!levels[@]}"; do
      c=${levels[$i]} n=${counts[$i]} name=$kind-$snippet-${levels[$i]}
      sleep "$REST"
      ab -q -k -n "$n" -c "$c" -s 300 -p "$TMP/body-$snippet.json" -T application/json \
        -H "Authorization: Bearer bench" -g "$TMP/$name.tsv" "http://127.0.0.1:$port/v1/run" \
        >"$TMP/$name.txt" 2>&1 || die "ab failed: $(tail -5 "$TMP/$name.txt")"
      results+=("$kind" "$snippet" "$c" "$TMP/$name.txt" "$TMP/$name.tsv")
    done
  done
  check "$port" || die "$kind does not answer the snippets after the load"
  kill -TERM "$server"
  wait "$server" 2>/dev/null || true
  server=
done

mkdir -p "$OUT"
python3 - "$OUT/http.json" "$POOL" "${results[@]}" <<'PY'
import json, re, sys
out, pool, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = []
for i in range(0, len(rest), 5):
    kind, snippet, c = rest[i], rest[i + 1], int(rest[i + 2])
    txt, tsv = open(rest[i + 3]).read(), rest[i + 4]
    def number(label, default=None):
        m = re.search(rf"^{label}:\s+([0-9.]+)", txt, re.M)
        if m is None and default is None:
            sys.exit(f"bench/http.sh: no '{label}' in ab's output:\n{txt}")
        return float(m.group(1)) if m else default
    # ab -g: one line per request, "ttime" its whole time in ms (ab's own percentile table is
    # wrong below 100 requests).
    lines = open(tsv).read().splitlines()
    column = lines[0].split("\t").index("ttime")
    times = sorted(float(line.split("\t")[column]) for line in lines[1:])
    pct = {q: times[round(q / 100 * (len(times) - 1))] for q in (50, 99, 100)}
    row = {"server": kind, "snippet": snippet, "pool": pool if kind in ("pool", "zygote") else 0,
           "concurrency": c,
           "requests": int(number("Complete requests")), "rps": number("Requests per second"),
           "mean_ms": number(r"Time per request", None), "p50_ms": pct[50], "p99_ms": pct[99],
           "max_ms": pct[100], "non_2xx": int(number("Non-2xx responses", 0))}
    rows.append(row)
    print(f"{snippet:<5} {kind:<10} c={c:<3} {row['requests']:4} requests: {row['rps']:7.1f} req/s, "
          f"mean {row['mean_ms']:7.1f} ms, p50 {row['p50_ms']:6.0f} ms, p99 {row['p99_ms']:6.0f} ms, "
          f"non-2xx {row['non_2xx']}")
    if row["non_2xx"]:
        sys.exit("bench/http.sh: some answers were not 2xx")
json.dump({"rows": rows}, open(out, "w"), indent=1)
PY
