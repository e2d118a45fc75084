#!/usr/bin/env bash
# Builds, once, the guest that tests/vm/run.sh boots, and caches it under $SANDCELL_VM_CACHE:
#   kernel/    Debian 12's own kernel (linux-image-amd64's current package, `apt-get download`)
#   root.img   an ext4 image of a debootstrap root (bookworm, minbase + what the tests need:
#              apparmor, iproute2, nftables, python3, systemd and the libraries sandcell loads)
#              with the kernel's modules, tests/vm/guest-init as its init (variant A) and the
#              systemd unit that runs the payload when systemd is PID 1 (variant B)
#   initrd     a busybox initramfs that loads the virtio and ext4 modules and switches to root.img
#              (the root must be a real filesystem: pivot_root fails on an initramfs root)
# A cached guest is reused while its recipe (this script, guest-init, the package list and the
# kernel version) is unchanged; otherwise it is rebuilt. Needs root, debootstrap, the Debian
# mirror and busybox-static; nothing after the first build.
#
# Usage: sudo tests/vm/build-guest.sh            prints the cache directory on success
# Environment: SANDCELL_VM_CACHE (default /var/cache/sandcell-vm)
set -euo pipefail

die() {
  echo "tests/vm/build-guest.sh: error: $*" >&2
  exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
CACHE=${SANDCELL_VM_CACHE:-/var/cache/sandcell-vm}
MIRROR=${SANDCELL_VM_MIRROR:-http://deb.debian.org/debian}

# What the guest needs: the tests' tools, and the libraries sandcell's binaries link or dlopen
# (ldd of cli/sandcell and the test binaries; dlopen'd: libarchive, libcurl, libnftables, libnl).
# Variant B: systemd as init, logind and the user manager (user@UID.service) with its D-Bus.
# time: the hostile suite measures the supervisor with /usr/bin/time; curl: the slirp tests ask
# their test host's service; strace: CgroupExit.*.
PACKAGES=(
  apparmor iproute2 nftables python3 kmod procps util-linux uidmap busybox-static time curl strace
  systemd dbus libpam-systemd dbus-user-session
  libarchive13 libcurl4 libnftables1 libnl-3-200 libnl-route-3-200 libhttp-parser2.9 libidn2-0
  libcpp-httplib0.11 libxml2 libicu72 libbrotli1 liblz4-1 libzstd1 libacl1 libnettle8 libssl3
  ca-certificates
)
# Installed with apt-get after debootstrap, which resolves no virtual package (podman's
# golang-github-containers-common depends on container-network-stack): slirp4netns for the slirp
# transport and rootless --net full; podman and buildah for sandcell-oci under podman (OciPodman.*).
APT_PACKAGES=(slirp4netns podman buildah)

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mkfs.ext4 -d keep owners)"
for tool in debootstrap mkfs.ext4 dpkg-deb apt-get cpio gzip; do
  command -v "$tool" >/dev/null 2>&1 || die "missing $tool (apt-get install qemu-system-x86 cpio debootstrap busybox-static)"
done
[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' ||
  die "/bin/busybox must be busybox-static (apt-get install qemu-system-x86 cpio debootstrap busybox-static)"

kernel_package=$(apt-cache depends linux-image-amd64 2>/dev/null |
  awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kernel_package" ] || die "apt-cache knows no linux-image-amd64 (apt-get update?)"

# The guest's recipe: bump GUEST_FORMAT when this script changes what it builds.
GUEST_FORMAT=3
# Docker's default seccomp profile (Confinement.DockersOwnProfilesRunABusyboxWorkload), copied from
# the host's golang-github-docker-docker-dev: that package would pull ~80 Go source packages.
docker_profile=/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json
[ -f "$docker_profile" ] || die "missing $docker_profile (apt-get install golang-github-docker-docker-dev)"
recipe=$( (echo "$GUEST_FORMAT ${PACKAGES[*]} ${APT_PACKAGES[*]}" && cat "$here/guest-init" "$here/guest-payload" \
  "$here/sandcell-vm-payload.service" "$here/initramfs-init" "$docker_profile") |
  sha256sum | cut -c1-16)-$kernel_package
if [ -f "$CACHE/recipe" ] && [ "$(cat "$CACHE/recipe")" = "$recipe" ] &&
  [ -f "$CACHE/root.img" ] && [ -f "$CACHE/initrd" ] && [ -f "$CACHE/vmlinuz" ]; then
  echo "$CACHE"
  exit 0
fi

echo "tests/vm/build-guest.sh: building the guest in $CACHE ($kernel_package)" >&2
mkdir -p "$CACHE"
chmod 0700 "$CACHE"
work=$(mktemp -d "$CACHE/build.XXXXXX")
# debootstrap mounts proc and sys inside the root; an interrupted build (Ctrl-C, a killed CI job)
# left /proc mounted under the cache, and rm -rf then walked the host's /proc.
cleanup() {
  local mount
  for mount in $(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$mount" 2>/dev/null || true
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# ---- kernel ---------------------------------------------------------------------------------------
(cd "$work" && apt-get download "$kernel_package" >/dev/null 2>&1) ||
  die "apt-get download $kernel_package failed"
dpkg-deb -x "$work"/"$kernel_package"_*.deb "$work/kernel"
version=${kernel_package#linux-image-}

# ---- root -----------------------------------------------------------------------------------------
root=$work/root
debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" bookworm "$root" \
  "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  die "debootstrap failed (log above)"
}
mount -t proc proc "$root/proc"
DEBIAN_FRONTEND=noninteractive chroot "$root" sh -c \
  "apt-get update -q && apt-get install -y -q --no-install-recommends ${APT_PACKAGES[*]}" >"$work/apt.log" 2>&1 || {
  tail -20 "$work/apt.log" >&2
  die "apt-get install ${APT_PACKAGES[*]} in the guest's root failed (log above)"
}
umount "$root/proc"
mkdir -p "$root/lib/modules"
cp -a "$work/kernel/lib/modules/$version" "$root/lib/modules/"
chroot "$root" depmod -a "$version"
install -m 0755 "$here/guest-init" "$root/sbin/sandcell-vm-init"
install -m 0755 "$here/guest-payload" "$root/sbin/sandcell-vm-payload"
install -m 0644 "$here/sandcell-vm-payload.service" "$root/etc/systemd/system/"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../sandcell-vm-payload.service "$root/etc/systemd/system/multi-user.target.wants/"
# The serial console carries the payload's output and the exit line: no login prompt on it.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
echo sandcell-vm >"$root/etc/hostname"
install -D -m 0644 "$docker_profile" "$root$docker_profile"
# The tests' unprivileged user (tests/vm/run.sh --user runs the command as it) with a subid range.
chroot "$root" useradd --create-home --uid 1000 --shell /bin/sh tester
echo "tester:100000:65536" >"$root/etc/subuid"
echo "tester:100000:65536" >"$root/etc/subgid"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

size_mb=$(($(du -sm "$root" | cut -f1) + 512))
mkfs.ext4 -q -F -L sc-vm-root -d "$root" "$work/root.img" "${size_mb}M" >&2

# ---- initramfs: load what the root disk needs, mount it, switch to it ------------------------------
initramfs=$work/initramfs
mkdir -p "$initramfs"/{bin,dev,proc,sys,newroot,modules}
cp /bin/busybox "$initramfs/bin/busybox"
modules_dir=$root/lib/modules/$version
# modules.dep lists each module's dependencies; load them depth-first, each once.
declare -A loaded=()
order=()
add_module() {
  local path=$1 dep
  [ -n "${loaded[$path]:-}" ] && return 0
  loaded[$path]=1
  for dep in $(awk -F': *' -v m="$path" '$1 == m { print $2 }' "$modules_dir/modules.dep"); do
    add_module "$dep"
  done
  order+=("$path")
}
# ext4 asks the crypto API for crc32c at mount time (a soft dependency modules.dep does not list).
for name in virtio_pci virtio_blk crc32c_generic ext4; do
  path=$(awk -F: -v n="/$name.ko" 'index($1, n) && substr($1, length($1) - length(n) + 1) == n { print $1; exit }' \
    "$modules_dir/modules.dep")
  [ -n "$path" ] || die "module $name not in $kernel_package"
  add_module "$path"
done
for path in "${order[@]}"; do
  cp "$modules_dir/$path" "$initramfs/modules/"
  basename "$path" >>"$initramfs/modules/order"
done
install -m 0755 "$here/initramfs-init" "$initramfs/init"
(cd "$initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd"

# ---- publish --------------------------------------------------------------------------------------
mv -f "$work/kernel/boot/vmlinuz-$version" "$CACHE/vmlinuz"
mv -f "$work/initrd" "$CACHE/initrd"
mv -f "$work/root.img" "$CACHE/root.img"
echo "$recipe" >"$CACHE/recipe"
echo "$CACHE"
