#!/usr/bin/env bash
# Installs every package sandcell needs to build, test and benchmark on Debian/Ubuntu.
# Idempotent: packages already present are skipped by apt-get; safe to run on every CI run.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang-format
  # lld links the lean `sandcell` with its hot functions first (cli/sandcell.order)
  lld
  # libFuzzer targets (scripts/fuzz.sh): clang with its sanitizer and fuzzer runtimes
  clang libclang-rt-dev
  # libraries sandcell links against
  libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev googletest libarchive-dev libssl-dev libcurl4-openssl-dev libnftables-dev zlib1g-dev
  libidn2-dev libhttp-parser-dev libcpp-httplib-dev
  # sd-bus: sandcell-oci --systemd-cgroup asks systemd for transient scopes over D-Bus
  libsystemd-dev
  # the Docker Engine API (dockerapi/): an HTTP server with the connection hijack (MHD upgrade)
  libmicrohttpd-dev
  # test fixtures: a static busybox rootfs; a static helper is built with the C compiler.
  # libc6-dev's libc.a also links the lean `sandcell` as a static PIE (cli/CMakeLists.txt)
  busybox-static libc6-dev
  # tools the tests and benchmarks compare against or drive
  hyperfine bubblewrap runc util-linux iproute2 procps nftables
  # `--net full` without root (and `--net-transport slirp`): user-mode networking; curl asks the
  # slirp tests' host for its own service (busybox wget crashed there)
  slirp4netns curl
  # skills tests build a wheel with python3; bench/code.sh reads hyperfine's JSON with jq
  python3 jq
  # setcap: the hostile suite gives a binary file capabilities and checks it gains nothing;
  # GNU time measures the supervisor's peak RSS; strace shows the order of the supervisor's
  # cgroup removal and reap (integration/cgroup_exit_test.cpp)
  libcap2-bin time strace
  # image interop: real tools read and write what sandcell stores
  skopeo umoci podman buildah debootstrap uidmap fuse-overlayfs
  # tests/vm: the pure cgroup v2 + AppArmor guest (qemu under software emulation, its busybox
  # initramfs packed with cpio; debootstrap and busybox-static are listed above)
  qemu-system-x86 cpio
  # registries: Debian's docker-registry (distribution) and htpasswd -B for its Basic auth
  docker-registry apache2-utils
  # sandcell-oci is driven by containerd (ctr + its runc shim) in the OCI runtime tests; the CRI
  # test (tests/cri) enables containerd's CRI plugin with the loopback and static CNI plugins and
  # speaks CRI v1 with grpcio, its messages compiled by protoc at build time
  containerd containernetworking-plugins python3-grpcio python3-protobuf protobuf-compiler
  # the Docker and containers-common seccomp profiles are loaded in the confinement tests
  golang-github-docker-docker-dev golang-github-containers-common
  # AppArmor profiles are checked with apparmor_parser -QK even where the kernel lacks AppArmor
  apparmor
  # the Docker API tests drive the real clients: docker.io for the `docker` CLI only (its daemon
  # is never started; DOCKER_HOST points at sandcell) and python3-docker (docker-py)
  docker.io python3-docker
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The MCP interop test runs the official MCP TypeScript SDK client on Node.js (>= 18). A host
# with Node from elsewhere (nodesource) keeps it: Debian's npm would conflict with that nodejs.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
