#!/usr/bin/env bash
# The tests built with ASan + UBSan (the `asan` preset), as CI runs them after the default preset
# (scripts/test.sh): every unit test, and the integration tests that drive the supervisor, the
# child setup, seccomp notification, Landlock, cgroups and the hostile programs.
# SANDCELL_ASAN_ALL=1 runs every integration test instead. Arguments go to ctest.
#
# Left out of CI, to keep the suite's time budget (they roughly double the ASan run, measured in
# the hostile issue's report): Images.* and LayerRoot.* (image builds and layer trees: the
# rootfs-builder code is covered by its unit tests and by fuzz_dockerfile, fuzz_layer_extract and
# fuzz_image_json under ASan), NetworkPolicy.* and NetworkHost.* (veths, nftables and the proxy:
# covered by their unit tests and fuzz_proxy_request, fuzz_host_name), CgroupHost*.* (cgroup file
# writes, also run by every sandbox), Builtin/DeniedSyscall.* (the same notify path as
# Profiles/ReportedDenial.*).
# Left out always, because they measure what a sanitizer changes on purpose: the supervisor's
# peak RSS (ASan's shadow memory and quarantine add tens of MiB) and the soak's RSS growth.
set -euo pipefail
cd "$(dirname "$0")/.."

never='MemoryStaysBounded|HundredMegabyteLine|Soak\.'
subset='^unit\.|^integration\.(BadInput|Isolation|Limits|Supervisor|Seccomp|Confinement|Landlock|Profiles/ReportedDenial|Hostile[A-Za-z]*|Hostile/DefaultProfileDenies|PrivilegedBinaries|HostBystander|PlantedSymlinks)\.|^host_is_clean$'
[ "${SANDCELL_ASAN_ALL:-}" = 1 ] && subset='.'

cmake --preset asan
# Only what the subset runs: the executables, the test rootfs and the two test binaries (the
# `asan` build preset lists them), not the skills and agent test programs.
if [ "${SANDCELL_ASAN_ALL:-}" = 1 ]; then cmake --build --preset asan --target all; else cmake --build --preset asan; fi
ctest --preset asan --timeout 600 -R "$subset" -E "$never" "$@"
