#!/usr/bin/env bash
# The main job on a fresh machine: install what is needed, build sandcell, make the Debian base
# image with debootstrap (no registry needed), build the python skill image, then run a Python
# snippet with `sandcell code` and print its output and its result.
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
echo "== sandcell skills build python   (agent/skills/python: python3, numpy, pandas, matplotlib)"
"$sandcell" skills build python

snippet='import numpy as np, platform
print("hello from", platform.node())
print("numpy says", np.arange(10).sum())'
echo "== sandcell code --skill python --report /tmp/sandcell-quickstart.json -   (the snippet on stdin)"
echo "$snippet" | "$sandcell" code --skill python --report /tmp/sandcell-quickstart.json -
echo "== result (stdout, stderr, exit_code, status, error, usage, report, artifacts)"
cat /tmp/sandcell-quickstart.json
