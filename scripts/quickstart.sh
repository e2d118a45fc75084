#!/usr/bin/env bash
# The main job on a fresh machine: install what is needed, build, and run a snippet in a
# sandbox, printing its output and its result record.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default

rootfs=build/default/test-rootfs
snippet='echo "hello from $(hostname), pid $$, as uid $(id -u)"; ls /'
echo "== sandcell run --rootfs $rootfs -- /bin/sh -c '$snippet'"
build/default/cli/sandcell run --rootfs "$rootfs" --report /tmp/sandcell-quickstart.json \
  -- /bin/sh -c "$snippet"
echo "== result record (--report /tmp/sandcell-quickstart.json)"
cat /tmp/sandcell-quickstart.json
