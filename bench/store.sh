# shellcheck shell=bash
# Sourced by the benchmarks that run the skill images (bench/pool.sh, bench/code.sh, bench/http.sh).
#   test_store BUILD          the store the build's tests use: SANDCELL_TEST_STORE from
#                             BUILD/CMakeCache.txt (cmake -DSANDCELL_TEST_STORE=...), else
#                             BUILD/test-store
#   skill_built SANDCELL ROOT NAME   true when skill NAME's image is built in ROOT
#   skill_layers SANDCELL ROOT IMAGE the unpacked layer directories of IMAGE, top first, joined
#                             by ':' (an overlay's lowerdir)
test_store() {
  local store
  store=$(sed -n 's/^SANDCELL_TEST_STORE:PATH=//p' "$1/CMakeCache.txt" 2>/dev/null || true)
  echo "${store:-$1/test-store}"
}

skill_built() {
  "$1" --root "$2" skills list --json |
    python3 -c 'import json, sys; sys.exit(0 if any(s["name"] == sys.argv[1] and s["built"] for s in json.load(sys.stdin)) else 1)' "$3"
}

skill_layers() {
  "$1" --root "$2" inspect "$3" | python3 -c '
import json, os, sys
config = json.load(sys.stdin)[0]["Config"]
dirs = [os.path.join(sys.argv[1], "layers", d.split(":", 1)[1]) for d in config["rootfs"]["diff_ids"]]
missing = [d for d in dirs if not os.path.isdir(d)]
if missing:
    sys.exit(f"layers not unpacked (run the image once): {missing}")
print(":".join(reversed(dirs)))' "$2"
}
