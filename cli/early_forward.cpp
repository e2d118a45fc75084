// The static `sandcell`'s entry point: a command line for `sandcell-images` (anything but `gc` and
// `run --rootfs`, as cli/forward.cpp's forward_unless_lean decides) is handed over before glibc
// starts. glibc's start costs ~0.5 ms on our CI VM (its cache-size probe: CPUID, a VM exit each;
// bench/README.md, "Session 13"), and then main() would only exec the sibling, which pays it
// again. Everything else starts as before: the entry jumps to glibc's _start with the stack and
// %rdx the kernel gave it.
//
// Nothing here may need what glibc sets up: the static PIE is not relocated yet (no pointer in
// data may be used: only the stack, code and string literals, which are reached relative to the
// instruction pointer), there is no thread pointer (no stack protector, no errno), and a libc
// function may be an IFUNC not resolved yet (no call to one, nor a loop the compiler turns into
// one: CMakeLists.txt compiles this file freestanding). Whatever does not go as planned here (an
// unusual command line, /proc unreadable, a path too long, the execve failing) falls through to
// main(), which decides again and reports errors as it always did.
#include <sys/syscall.h>

namespace {

long raw_syscall3(long number, long a, long b, long c) {
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return result;
}

bool equal(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

bool starts_with(const char* text, const char* prefix) {
  while (*prefix != '\0')
    if (*text++ != *prefix++) return false;
  return true;
}

// forward.cpp's lean_command, word for word: the verb is the first word that is not a global
// option (`--root DIR`, `--root=DIR`); no verb, or another option first, goes to the full binary.
bool lean_command(int argc, char** argv) {
  int verb = -1;
  for (int i = 1; i < argc; ++i) {
    if (equal(argv[i], "--root")) {
      ++i;
      continue;
    }
    if (argv[i][0] != '-') {
      verb = i;
      break;
    }
    if (!starts_with(argv[i], "--root=")) return false;
  }
  if (verb < 0) return false;
  if (equal(argv[verb], "gc")) return true;
  if (!equal(argv[verb], "run")) return false;
  for (int i = verb + 1; i < argc && !equal(argv[i], "--"); ++i)
    if (equal(argv[i], "--rootfs") || starts_with(argv[i], "--rootfs=")) return true;
  return false;
}

}  // namespace

// `stack` is what the kernel's %rsp pointed at: argc, argv..., nullptr, envp..., nullptr.
extern "C" __attribute__((used)) void sandcell_early_forward(long* stack) {
  const int argc = static_cast<int>(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  char** envp = argv + argc + 1;
  if (argc < 1 || lean_command(argc, argv)) return;
  // exec_sibling() in forward.cpp: sandcell-images next to /proc/self/exe, as argv[0].
  const char sibling[] = "sandcell-images";
  char path[4096];
  const long n = raw_syscall3(SYS_readlink, reinterpret_cast<long>("/proc/self/exe"),
                              reinterpret_cast<long>(path), sizeof path);
  if (n <= 0 || n >= static_cast<long>(sizeof path)) return;
  long dir_end = n;
  while (dir_end > 0 && path[dir_end - 1] != '/') --dir_end;
  if (dir_end == 0 || dir_end + static_cast<long>(sizeof sibling) > static_cast<long>(sizeof path))
    return;
  for (unsigned long i = 0; i < sizeof sibling; ++i)
    path[dir_end + static_cast<long>(i)] = sibling[i];
  char* const original = argv[0];
  argv[0] = path;
  raw_syscall3(SYS_execve, reinterpret_cast<long>(path), reinterpret_cast<long>(argv),
               reinterpret_cast<long>(envp));
  argv[0] = original;  // the execve failed: main() tries again and says why
}

// The ELF entry (-Wl,-e,sandcell_entry, CMakeLists.txt): the call with an aligned stack, then
// glibc's _start with the kernel's %rsp and %rdx, as if it had been the entry.
__asm__(
    ".text\n"
    ".globl sandcell_entry\n"
    ".type sandcell_entry, @function\n"
    "sandcell_entry:\n"
    "  mov %rsp, %rbx\n"
    "  mov %rdx, %r12\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call sandcell_early_forward\n"
    "  mov %rbx, %rsp\n"
    "  mov %r12, %rdx\n"
    "  jmp _start\n"
    ".size sandcell_entry, .-sandcell_entry\n");
