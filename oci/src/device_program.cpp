// The cgroup v2 device program: one block of instructions per rule, last rule first.
#include "device_program.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::oci {
namespace {

constexpr bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  return bpf_insn{.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}
constexpr bpf_insn load_ctx_word(uint8_t dst, int16_t off) {
  return insn(BPF_LDX | BPF_MEM | BPF_W, dst, 1, off, 0);
}
constexpr bpf_insn jump_if_not(uint8_t reg, int32_t value, int16_t skip) {
  return insn(BPF_JMP | BPF_JNE | BPF_K, reg, 0, skip, value);
}
constexpr bpf_insn return_value(int32_t value) {
  return insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, value);
}
constexpr bpf_insn exit_program() {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

int32_t access_bits(const std::string& access) {
  int32_t bits = 0;
  for (char c : access)
    bits |= c == 'm' ? BPF_DEVCG_ACC_MKNOD : c == 'r' ? BPF_DEVCG_ACC_READ : BPF_DEVCG_ACC_WRITE;
  return bits;
}

// R2 = device type, R3 = requested access, R4 = major, R5 = minor (struct bpf_cgroup_dev_ctx).
// A rule matches when the type and numbers match and it grants every requested access bit.
std::vector<bpf_insn> rule_block(const DeviceRule& rule) {
  std::vector<bpf_insn> checks;
  int32_t granted = access_bits(rule.access);
  if (rule.type != 'a')
    checks.push_back(
        jump_if_not(2, rule.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR, 0));
  if (granted != (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)) {
    checks.push_back(insn(BPF_ALU | BPF_MOV | BPF_X, 1, 3, 0, 0));
    checks.push_back(insn(BPF_ALU | BPF_AND | BPF_K, 1, 0, 0, ~granted));
    checks.push_back(jump_if_not(1, 0, 0));
  }
  if (rule.major >= 0) checks.push_back(jump_if_not(4, static_cast<int32_t>(rule.major), 0));
  if (rule.minor >= 0) checks.push_back(jump_if_not(5, static_cast<int32_t>(rule.minor), 0));
  checks.push_back(return_value(rule.allow ? 1 : 0));
  checks.push_back(exit_program());
  // Every conditional jump skips to the end of this block: the next (earlier) rule.
  for (size_t i = 0; i < checks.size(); ++i)
    if (checks[i].code == (BPF_JMP | BPF_JNE | BPF_K))
      checks[i].off = static_cast<int16_t>(checks.size() - i - 1);
  return checks;
}

long bpf(int cmd, bpf_attr& attr) {
  return syscall(SYS_bpf, cmd, &attr, sizeof attr);
}

}  // namespace

std::vector<bpf_insn> device_program(const std::vector<DeviceRule>& rules) {
  size_t first = 0;
  bool default_allow = true;
  for (size_t i = 0; i < rules.size(); ++i)
    if (rules[i].type == 'a' && rules[i].major < 0 && rules[i].minor < 0 &&
        rules[i].access.find_first_not_of("rwm") == std::string::npos &&
        access_bits(rules[i].access) == 7) {
      first = i + 1;
      default_allow = rules[i].allow;
    }
  std::vector<bpf_insn> program = {
      load_ctx_word(2, 0), insn(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xFFFF),
      load_ctx_word(3, 0), insn(BPF_ALU | BPF_RSH | BPF_K, 3, 0, 0, 16),
      load_ctx_word(4, 4), load_ctx_word(5, 8)};
  for (size_t i = rules.size(); i > first; --i) {
    std::vector<bpf_insn> block = rule_block(rules[i - 1]);
    program.insert(program.end(), block.begin(), block.end());
  }
  program.push_back(return_value(default_allow ? 1 : 0));
  program.push_back(exit_program());
  return program;
}

void attach_device_program(const std::string& dir, const std::vector<DeviceRule>& rules) {
  std::vector<bpf_insn> program = device_program(rules);
  static const char kLicense[] = "Apache";
  char log[4096] = {};
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  load.log_buf = reinterpret_cast<uint64_t>(log);
  load.log_size = sizeof log;
  load.log_level = 1;
  runtime::UniqueFd prog(static_cast<int>(bpf(BPF_PROG_LOAD, load)));
  if (!prog)
    throw Error(errno, "linux.resources.devices: load the cgroup v2 device program (" +
                           std::string(log, strnlen(log, 200)) + ")");
  runtime::UniqueFd cgroup(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!cgroup) throw Error(errno, "linux.resources.devices: open " + dir);
  bpf_attr attach{};
  attach.target_fd = static_cast<uint32_t>(cgroup.get());
  attach.attach_bpf_fd = static_cast<uint32_t>(prog.get());
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  if (bpf(BPF_PROG_ATTACH, attach) < 0)
    throw Error(errno, "linux.resources.devices: attach the device program to " + dir);
}

}  // namespace sandcell::oci
