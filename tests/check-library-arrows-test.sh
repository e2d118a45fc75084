#!/usr/bin/env bash
# The dependency check itself (scripts/check-library-arrows.py): on small trees made here, with
# the repository's arrows, it passes allowed uses and fails each kind of forbidden one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
check=$repo/scripts/check-library-arrows.py
arrows=$repo/scripts/library-arrows.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# A tree of three libraries whose one use is allowed (seccomp and runtime use base).
make_tree() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree"/{base,seccomp,runtime}/src
  echo '#include "sandcell/base/error.hpp"' > "$work/tree/seccomp/src/compile.cpp"
  echo '#include <sandcell/seccomp/program.hpp>' > "$work/tree/runtime/src/sandbox.cpp"
  echo 'target_link_libraries(sandcell_seccomp PUBLIC sandcell_base sandcell_dep_seccomp)' \
    > "$work/tree/seccomp/CMakeLists.txt"
}

expect() {  # expect pass|fail WHAT [MESSAGE]: runs the check on the tree
  local want=$1 what=$2 message=${3:-} rc=0
  python3 "$check" "$work/tree" "$arrows" > "$work/out" 2>&1 || rc=$?
  if [ "$want" = pass ] && [ $rc -ne 0 ]; then
    echo "FAIL: $what: the check failed:"; cat "$work/out"; failures=$((failures + 1))
  elif [ "$want" = fail ] && [ $rc -eq 0 ]; then
    echo "FAIL: $what: the check passed"; failures=$((failures + 1))
  elif [ -n "$message" ] && ! grep -qF "$message" "$work/out"; then
    echo "FAIL: $what: no \"$message\" in:"; cat "$work/out"; failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}

make_tree
expect pass "allowed includes and links pass"

make_tree
echo '#include "sandcell/runtime/spec.hpp"' >> "$work/tree/seccomp/src/compile.cpp"
expect fail "seccomp including a runtime header fails" \
  "seccomp/src/compile.cpp:2: seccomp must not use runtime (includes sandcell/runtime/)"

make_tree
echo '#include <sandcell/seccomp/profile.hpp>' > "$work/tree/base/src/error.cpp"
expect fail "base including anything of sandcell fails" "base must not use seccomp"

make_tree
echo 'target_link_libraries(sandcell_seccomp PUBLIC sandcell_runtime)' >> "$work/tree/seccomp/CMakeLists.txt"
expect fail "seccomp linking sandcell_runtime fails" "seccomp must not use runtime (links sandcell_runtime)"

make_tree
echo 'target_include_directories(sandcell_seccomp PUBLIC ${PROJECT_SOURCE_DIR}/runtime/include)' \
  >> "$work/tree/seccomp/CMakeLists.txt"
expect fail "seccomp taking runtime's include directory fails" "includes from runtime/include"

make_tree
echo '#include "sandcell/nowhere/x.hpp"' >> "$work/tree/runtime/src/sandbox.cpp"
expect fail "an include of no library's headers fails" "sandcell/nowhere/ is no library's headers"

make_tree
sed 's/^base \(.*\) -$/base \1 runtime/' "$arrows" > "$work/cyclic.txt"
grep -q '^base .* runtime$' "$work/cyclic.txt"
arrows=$work/cyclic.txt expect fail "a cycle in the arrows fails" "form a cycle"

[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
