#include "denied_syscall_log.hpp"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

constexpr uint64_t kX32Bit = 0x40000000;  // __X32_SYSCALL_BIT

// Linux 6.6 uapi, newer than Debian 12's headers: wake the blocked caller on the CPU of the
// supervisor that answers, instead of a cross-CPU wake-up (the round trip is most of the cost
// of a reported denial).
constexpr unsigned long kNotifSetFlags = SECCOMP_IOW(4, uint64_t);
constexpr uint64_t kSyncWakeUp = 1;

seccomp_notif_sizes kernel_sizes() {
  // The kernel's structs may be larger than the ones in our headers; buffers follow its sizes.
  seccomp_notif_sizes sizes{};
  check(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes), "seccomp(SECCOMP_GET_NOTIF_SIZES)");
  return sizes;
}

}  // namespace

DeniedSyscallLog::DeniedSyscallLog(UniqueFd listener, const SeccompNotifyPlan& plan)
    : listener_(std::move(listener)), plan_(plan) {
  seccomp_notif_sizes sizes = kernel_sizes();
  request_.resize(std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  response_.resize(std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  ioctl(listener_.get(), kNotifSetFlags, kSyncWakeUp);  // best effort: older kernels say EINVAL
}

bool DeniedSyscallLog::answer_pending() {
  bool kill = false;
  for (int i = 0; i < 64; ++i) {  // bounded: the loop must also serve deadlines and output
    pollfd ready{.fd = listener_.get(), .events = POLLIN, .revents = 0};
    if (poll(&ready, 1, 0) <= 0 || !(ready.revents & POLLIN)) break;
    kill |= answer_one();
  }
  return kill;
}

bool DeniedSyscallLog::answer_one() {
  std::fill(request_.begin(), request_.end(), 0);
  auto* request = reinterpret_cast<seccomp_notif*>(request_.data());
  // ENOENT: the caller died (or was killed) before we read it; nothing to answer.
  if (ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, request) < 0) return false;
  const uint32_t arch = request->data.arch;
  const uint64_t nr = static_cast<uint32_t>(request->data.nr);
  const bool foreign = arch != plan_.native_arch || (nr & kX32Bit) != 0;
  std::string name = plan_.name_of ? plan_.name_of(arch, nr) : "syscall_" + std::to_string(nr);
  ++counts_[name];

  if (foreign && plan_.kill_on_foreign_abi) {
    // Not answered: the caller stays blocked in the call until the sandbox is killed.
    if (kill_reason_.empty()) kill_reason_ = "killed for a call through a foreign ABI: " + name;
    return true;
  }
  auto errno_rule = plan_.errno_for.find((uint64_t{arch} << 32) | nr);
  int err = errno_rule != plan_.errno_for.end() ? errno_rule->second : plan_.default_errno;
  std::fill(response_.begin(), response_.end(), 0);
  auto* response = reinterpret_cast<seccomp_notif_resp*>(response_.data());
  response->id = request->id;
  response->error = -err;
  ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, response);  // ENOENT: caller gone
  return false;
}

std::vector<DeniedSyscall> DeniedSyscallLog::denied() const {
  std::vector<DeniedSyscall> list;
  for (const auto& [name, count] : counts_) list.push_back({.name = name, .count = count});
  return list;
}

}  // namespace sandcell::runtime
