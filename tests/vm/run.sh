#!/usr/bin/env bash
# Boots the cached guest (tests/vm/build-guest.sh) under qemu and runs one command inside it, as
# root or as the unprivileged user `tester`, on the kernel command line of a pure cgroup v2 host
# with AppArmor enforcing (cgroup_no_v1=all, lsm=...,apparmor). Prints the guest's console and
# exits with the command's status (125 when the guest could not run it, 124 on timeout).
#
# The payload disk holds the source tree (without .git and build trees) and, under the same
# relative path, the build tree's binaries (debug info stripped) and test-rootfs; the guest mounts
# it at the host's absolute source path, so paths compiled into the test binaries stay true.
# Writes inside the guest go to a copy-on-write layer (qemu snapshot=on): the cached guest and the
# payload image are never changed, and nothing runs on the host after this script returns.
#
# Usage: sudo tests/vm/run.sh [--user root|tester] [--init plain|systemd] [--timeout SECONDS] [--build DIR] -- CMD [ARG...]
#   CMD runs in the source tree's root inside the guest.
#   --init    plain: tests/vm/guest-init is PID 1 (variant A, default); systemd: systemd is, with
#             logind and user managers, and runs CMD from a unit once the system is up (variant B)
#   --build   the build tree (default build/default, relative to the source tree)
# Environment: SANDCELL_VM_CACHE (see build-guest.sh), SANDCELL_VM_MEMORY (MiB, default 3072),
#   SANDCELL_VM_CPUS (emulated CPUs, default: the host's), SANDCELL_VM_APPEND (more kernel command
#   line, e.g. "systemd.show_status=1 systemd.log_level=info" to watch a variant-B boot)
set -euo pipefail

die() {
  echo "tests/vm/run.sh: error: $*" >&2
  exit 125
}

usage() {
  sed -n '/^# Usage:/,/^# Environment:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
user=root
init=plain
timeout=900
build=build/default
while [ $# -gt 0 ]; do
  case $1 in
  --user) user=${2:?}; shift 2 ;;
  --init) init=${2:?}; shift 2 ;;
  --timeout) timeout=${2:?}; shift 2 ;;
  --build) build=${2:?}; shift 2 ;;
  --) shift; break ;;
  -h | --help) usage ;;
  *) usage ;;
  esac
done
[ $# -gt 0 ] || usage
[[ $user == root || $user == tester ]] || die "--user must be root or tester (got '$user')"
[[ $init == plain || $init == systemd ]] || die "--init must be plain or systemd (got '$init')"
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds (got '$timeout')"
[ "$(id -u)" -eq 0 ] || die "must run as root (mkfs.ext4 -d keeps owners)"
command -v qemu-system-x86_64 >/dev/null 2>&1 || die "missing qemu-system-x86_64 (apt-get install qemu-system-x86 cpio debootstrap busybox-static)"

build_abs=$(cd "$src" && cd "$build" 2>/dev/null && pwd) || die "no build tree at $build"
case $build_abs in
"$src"/*) build_rel=${build_abs#"$src"/} ;;
*) die "the build tree must be inside the source tree ($src), not $build_abs" ;;
esac
[ -x "$build_abs/cli/sandcell" ] || die "$build_abs/cli/sandcell not built"

cache=$("$here/build-guest.sh") || die "the guest could not be built (tests/vm/build-guest.sh)"

work=$(mktemp -d /var/tmp/sandcell-vm-run.XXXXXX)
qemu_pid=
cleanup() {
  # timeout(1) passes TERM on to qemu and waits for it.
  if [ -n "$qemu_pid" ]; then
    kill -TERM "$qemu_pid" 2>/dev/null
    wait "$qemu_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # scripts/test.sh ends the VM stage's process group: clean up all the same

# ---- payload ----------------------------------------------------------------------------------------
stage=$work/stage
mkdir -p "$stage/$build_rel"
tar -C "$src" --exclude=./.git --exclude=./build --exclude="./$build_rel" -cf - . | tar -C "$stage" -xf -
(
  cd "$build_abs"
  # Executables the tests start (debug info stripped: the guest needs code, not 300 MB of DWARF),
  # and the fixtures the build made.
  find . -path ./test-store -prune -o -type f -perm -u+x -not -path '*/CMakeFiles/*' -print |
    while read -r file; do
      mkdir -p "$stage/$build_rel/$(dirname "$file")"
      if file -b "$file" | grep -q '^ELF'; then
        objcopy --strip-debug "$file" "$stage/$build_rel/$file"
      else
        cp -a "$file" "$stage/$build_rel/$file"
      fi
    done
  cp -a test-rootfs "$stage/$build_rel/"
)
{
  echo "cd $(printf '%q' "$src") || exit 125"
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$stage/.vm-command"
size_mb=$(($(du -sm "$stage" | cut -f1) * 5 / 4 + 256))
mkfs.ext4 -q -F -L sc-vm-payload -d "$stage" "$work/payload.img" "${size_mb}M" >&2
rm -rf "$stage"

# ---- boot ---------------------------------------------------------------------------------------------
append="console=ttyS0 root=/dev/vda rw panic=-1 quiet loglevel=3 mitigations=off"
append+=" cgroup_no_v1=all lsm=landlock,lockdown,yama,apparmor,bpf apparmor=1"
append+=" sandcell.payload=$src sandcell.user=$user"
[ "$init" = plain ] || append+=" sandcell.init=systemd systemd.show_status=0 systemd.log_level=warning"
append+=" ${SANDCELL_VM_APPEND:-}"
: >"$work/console.log"
timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
  -accel tcg -cpu max -smp "${SANDCELL_VM_CPUS:-$(nproc)}" -m "${SANDCELL_VM_MEMORY:-3072}" \
  -nodefaults -display none -no-reboot -monitor none -serial stdio \
  -kernel "$cache/vmlinuz" -initrd "$cache/initrd" -append "$append" \
  -drive "file=$cache/root.img,if=virtio,format=raw,snapshot=on" \
  -drive "file=$work/payload.img,if=virtio,format=raw,snapshot=on" \
  </dev/null >"$work/console.log" 2>&1 &
qemu_pid=$!
# tail in the background and `wait` here: bash runs a trap only between commands, and a TERM
# sent to this script alone (not its group) would wait for a foreground tail, i.e. for qemu.
tail -n +1 -f --pid="$qemu_pid" "$work/console.log" &
tail_pid=$!
wait "$qemu_pid" || true
qemu_pid=
wait "$tail_pid" || true

status=$(sed -n 's/^sandcell-vm: exit \([0-9]*\).*/\1/p' "$work/console.log" | tail -1)
if [ -z "$status" ]; then
  if grep -q . "$work/console.log"; then
    echo "tests/vm/run.sh: the guest stopped without reporting an exit status (timeout ${timeout}s?)" >&2
  fi
  exit 124
fi
exit "$status"
