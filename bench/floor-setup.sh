# shellcheck shell=bash
# Sourced by bench/floor.sh and bench/startup.sh: builds bench/floor.c and makes the network
# namespace its pooled levels join (see the top of floor.c).
#   floor_setup DIR   compiles DIR/floor, makes the namespace on $FLOOR_NETNS (sets FLOOR and
#                     FLOOR_NETNS); the caller's EXIT trap must call floor_cleanup
#   floor_cleanup     unmounts and removes the namespace file (safe to call when none was made)
#   floor_command LEVEL ROOTFS   prints the command line of one level
FLOOR_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/floor.c
FLOOR=
FLOOR_NETNS=
FLOOR_SCRATCH=/run/sandcell/scratch  # where sandcell mounts its scratch tmpfs too

floor_setup() {
  local dir=$1
  for tool in cc ip mountpoint; do
    command -v "$tool" >/dev/null 2>&1 || { echo "floor: missing $tool (scripts/install-deps.sh)" >&2; return 1; }
  done
  cc -O2 -Wall -o "$dir/floor" "$FLOOR_SRC" -lseccomp || return 1
  FLOOR=$dir/floor
  mkdir -p "$FLOOR_SCRATCH"
  FLOOR_NETNS=/run/sandcell/floor-netns-$$  # made here; parallel and complete put the next one on it
  touch "$FLOOR_NETNS"
  unshare --net="$FLOOR_NETNS" ip link set lo up || { echo "floor: cannot make a network namespace on $FLOOR_NETNS" >&2; return 1; }
}

floor_cleanup() {
  [ -n "$FLOOR_NETNS" ] || return 0
  if mountpoint -q "$FLOOR_NETNS" 2>/dev/null; then umount "$FLOOR_NETNS"; fi
  rm -f "$FLOOR_NETNS"
}

floor_command() {
  echo "$FLOOR $1 $2 $FLOOR_SCRATCH $FLOOR_NETNS"
}
