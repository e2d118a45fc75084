#!/usr/bin/env bash
# Fails if the host still holds anything a sandcell run created: mounts, cgroups under a
# sandcell parent, run state, veths, nft tables, or sandcell processes.
set -u
bad=0
say() { echo "host not clean: $*"; bad=1; }

# Runs as root leave one unused network namespace for the next (runtime/src/netns_pool.hpp): a
# cache, removed here as `sandcell gc` would, so the host ends as it began. A taken or half-made
# entry is what a run left behind; it stays and is reported (its mount below).
pool=/run/sandcell/netns
if [ -d $pool ]; then
  n=$(find $pool -mindepth 1 -maxdepth 1 -name 'ready-*' | wc -l)
  [ "$n" -le 20 ] || say "$n namespaces in $pool: the pool grew"
  for entry in $pool/ready-*; do
    [ -d "$entry" ] || continue
    umount -l "$entry/ns" 2>/dev/null
    rm -f "$entry/ns"
    rmdir "$entry"
  done
  for entry in $pool/*; do
    [ -e "$entry" ] && say "network namespace pool entry left by a run: $entry"
  done
  rmdir $pool 2>/dev/null
fi
n=$(grep -c sandcell /proc/self/mountinfo || true)
[ "$n" -eq 0 ] || say "$n mounts mention sandcell: $(grep sandcell /proc/self/mountinfo | head -3)"
for d in /sys/fs/cgroup/*/sandcell /sys/fs/cgroup/sandcell; do
  [ -d "$d" ] || continue
  n=$(find "$d" -mindepth 1 -type d | wc -l)
  [ "$n" -eq 0 ] || say "$n cgroups under $d"
done
# /run/sandcell/scratch stays, empty: every run's child mounts its scratch tmpfs on it, in its own
# mount namespace (runtime/src/run_state.hpp).
if [ -d /run/sandcell ]; then
  n=$(find /run/sandcell -mindepth 1 -maxdepth 1 ! -name scratch | wc -l)
  [ "$n" -eq 0 ] || say "$n run state entries under /run/sandcell"
  n=$(find /run/sandcell/scratch -mindepth 1 2>/dev/null | wc -l)
  [ "$n" -eq 0 ] || say "$n entries in /run/sandcell/scratch (a mount point that must stay empty)"
fi
n=$(ip -o link show 2>/dev/null | grep -c ' sc-' || true)
[ "$n" -eq 0 ] || say "$n links named sc-*"
# The table `inet sandcell` outlives runs by design (network/include/sandcell/network/nft_rules.hpp);
# what a run must not leave is an element in its sets. An idle table is removed here, as
# `sandcell gc` would, so the host ends as it began.
if nft list tables 2>/dev/null | grep -q 'inet sandcell'; then
  table=$(nft list table inet sandcell)
  if echo "$table" | grep -q 'h" \.\|nat_sources.*elements'; then
    say "nft table sandcell still holds run elements: $(echo "$table" | grep -m3 'elements = { [^1]\|h" \.')"
  elif echo "$table" | sed -n '/set nat_sources/,/}/p' | grep -q elements; then
    say "nft table sandcell still holds a masquerade source"
  else
    nft delete table inet sandcell
  fi
fi
# Users the rootless tests make (tests/integration/rootless_user.cpp) are removed with them.
n=$(grep -c '^sandcell-ci-' /etc/passwd || true)
[ "$n" -eq 0 ] || say "$n rootless test users left: $(grep '^sandcell-ci-' /etc/passwd | cut -d: -f1 | head -3)"
# Any process running from our build tree or the test rootfs (the probe program) is a leak, and
# so is a slirp4netns that sandcell started (network/src/slirp.cpp: these exact first flags).
# A run with a network is carried on by sandcell-net, `run IMAGE` by sandcell-images.
p=$(pgrep -f -a 'sandcell(-net|-images)? run|sc-probe|slirp4netns --configure --mtu=65520 --disable-host-loopback' |
    grep -v -e pgrep -e check-host-clean || true)
[ -z "$p" ] || say "processes left: $p"
[ $bad -eq 0 ] && echo "host is clean"
exit $bad
