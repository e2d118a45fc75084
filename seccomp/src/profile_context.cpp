// What a JSON profile's includes/excludes are judged against on this host.
#include <seccomp.h>
#include <sys/utsname.h>

#include <cstdio>
#include <map>

#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"

namespace sandcell::seccomp {

// Docker's names (moby profiles/seccomp nativeToSeccomp), keyed by libseccomp's tokens.
std::string native_docker_arch() {
  static const std::map<uint32_t, std::string> names = {
      {SCMP_ARCH_X86, "x86"},
      {SCMP_ARCH_X86_64, "amd64"},
      {SCMP_ARCH_X32, "x32"},
      {SCMP_ARCH_ARM, "arm"},
      {SCMP_ARCH_AARCH64, "arm64"},
      {SCMP_ARCH_MIPS64, "mips64"},
      {SCMP_ARCH_MIPS64N32, "mips64n32"},
      {SCMP_ARCH_MIPSEL64, "mipsel64"},
      {SCMP_ARCH_MIPSEL64N32, "mips3l64n32"},
      {SCMP_ARCH_MIPSEL, "mipsel"},
      {SCMP_ARCH_PPC, "ppc"},
      {SCMP_ARCH_PPC64, "ppc64"},
      {SCMP_ARCH_PPC64LE, "ppc64le"},
      {SCMP_ARCH_S390, "s390"},
      {SCMP_ARCH_S390X, "s390x"},
      {SCMP_ARCH_RISCV64, "riscv64"},
  };
  const auto it = names.find(seccomp_arch_native());
  return it == names.end() ? std::string() : it->second;
}

KernelVersion running_kernel() {
  utsname name{};
  check(::uname(&name), "uname");
  KernelVersion version;
  if (std::sscanf(name.release, "%u.%u", &version.major, &version.minor) != 2) {
    throw Error(EINVAL, std::string("parse kernel release '") + name.release + "'");
  }
  return version;
}

}  // namespace sandcell::seccomp
