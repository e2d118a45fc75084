#!/usr/bin/env bash
# The main job on a fresh machine: install what is needed, build sandcell, make the Debian base
# image with debootstrap (no registry needed), build the python skill image, then run a Python
# snippet in a sandbox and print its output and its result record.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
sandcell=build/default/cli/sandcell

if ! "$sandcell" inspect debian:bookworm-slim >/dev/null 2>&1; then
  echo "== sandcell bootstrap debian:bookworm-slim (debootstrap from the Debian mirror, ~1 min)"
  "$sandcell" bootstrap debian:bookworm-slim --suite bookworm --variant minbase
fi
echo "== sandcell build -t sandcell/python agent/skills/python"
"$sandcell" build -q -t sandcell/python agent/skills/python

snippet='import numpy as np, platform, os
print("hello from", platform.node(), "pid", os.getpid())
print("numpy says", np.arange(10).sum())'
echo "== sandcell run --report /tmp/sandcell-quickstart.json sandcell/python python3 -c '...'"
"$sandcell" run --report /tmp/sandcell-quickstart.json sandcell/python python3 -c "$snippet"
echo "== result record"
cat /tmp/sandcell-quickstart.json
