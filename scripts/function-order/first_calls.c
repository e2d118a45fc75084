// first_calls: which functions of a program a command line calls, in the order of their first
// call, across every process of that program it forks or clones (scripts/function-order.sh).
//
//   first_calls OFFSETS PROGRAM [ARG...]
//
// OFFSETS lists the program's functions as hex offsets from its load address (symbol values of
// a position-independent executable). The program is started under ptrace with a one-shot
// breakpoint (int3) on each of them; a hit prints the offset once, restores the byte in that
// process and lets it go on. Forks inherit the breakpoints not yet hit, so a child's own first
// calls are seen too. A process that execs another program is let go. Stdout: one offset per
// line; the program's own output goes to stderr. Run as root to follow a sandbox's setup.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

struct breakpoints {
  unsigned long* offsets;  // sorted
  unsigned char* saved;    // the byte each int3 replaced
  unsigned char* reported;
  size_t count;
};

static int compare_offsets(const void* a, const void* b) {
  unsigned long x = *(const unsigned long*)a, y = *(const unsigned long*)b;
  return x < y ? -1 : x > y;
}

static void fail(const char* what) {
  perror(what);
  exit(2);
}

static void read_offsets(const char* path, struct breakpoints* bp) {
  FILE* in = fopen(path, "r");
  if (!in) fail(path);
  size_t capacity = 4096;
  bp->offsets = malloc(capacity * sizeof *bp->offsets);
  for (unsigned long offset; fscanf(in, "%lx", &offset) == 1;) {
    if (bp->count == capacity)
      bp->offsets = realloc(bp->offsets, (capacity *= 2) * sizeof *bp->offsets);
    bp->offsets[bp->count++] = offset;
  }
  fclose(in);
  qsort(bp->offsets, bp->count, sizeof *bp->offsets, compare_offsets);
  bp->saved = calloc(bp->count, 1);
  bp->reported = calloc(bp->count, 1);
}

static long find_offset(const struct breakpoints* bp, unsigned long offset) {
  size_t lo = 0, hi = bp->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (bp->offsets[mid] == offset) return (long)mid;
    if (bp->offsets[mid] < offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

// The lowest address the program's file is mapped at in `pid`.
static unsigned long load_address(pid_t pid, const char* program) {
  char maps[64], line[4096], resolved[4096];
  if (!realpath(program, resolved)) fail(program);
  snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
  FILE* in = fopen(maps, "r");
  if (!in) fail(maps);
  unsigned long lowest = ~0ul;
  while (fgets(line, sizeof line, in)) {
    unsigned long start;
    char path[4096] = "";
    if (sscanf(line, "%lx-%*x %*s %*s %*s %*s %4095s", &start, path) == 2 &&
        strcmp(path, resolved) == 0 && start < lowest)
      lowest = start;
  }
  fclose(in);
  if (lowest == ~0ul) {
    fprintf(stderr, "first_calls: %s is not mapped in process %d\n", resolved, pid);
    exit(2);
  }
  return lowest;
}

// Writes `byte` at `address` in pid's memory; returns the byte that was there.
static unsigned char poke_byte(pid_t pid, unsigned long address, unsigned char byte) {
  errno = 0;
  long word = ptrace(PTRACE_PEEKTEXT, pid, address, 0);
  if (errno) fail("PTRACE_PEEKTEXT");
  unsigned char old = word & 0xff;
  word = (word & ~0xffl) | byte;
  if (ptrace(PTRACE_POKETEXT, pid, address, word) < 0) fail("PTRACE_POKETEXT");
  return old;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: first_calls OFFSETS PROGRAM [ARG...]\n");
    return 2;
  }
  struct breakpoints bp = {0};
  read_offsets(argv[1], &bp);

  pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    dup2(2, 1);  // stdout is the report
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    execv(argv[2], argv + 2);
    _exit(127);
  }
  int status;
  waitpid(child, &status, 0);  // its SIGSTOP
  ptrace(PTRACE_SETOPTIONS, child, 0,
         PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
             PTRACE_O_EXITKILL);
  ptrace(PTRACE_CONT, child, 0, 0);
  waitpid(child, &status, 0);  // the exec of the program
  if (!WIFSTOPPED(status) || status >> 16 != PTRACE_EVENT_EXEC) {
    fprintf(stderr, "first_calls: %s did not start\n", argv[2]);
    return 2;
  }
  const unsigned long base = load_address(child, argv[2]);
  for (size_t i = 0; i < bp.count; i++) bp.saved[i] = poke_byte(child, base + bp.offsets[i], 0xcc);
  ptrace(PTRACE_CONT, child, 0, 0);

  int program_status = 0;
  for (;;) {
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: everything ended
    }
    if (pid == child && (WIFEXITED(status) || WIFSIGNALED(status))) program_status = status;
    if (!WIFSTOPPED(status)) continue;
    const int signal = WSTOPSIG(status), event = status >> 16;
    if (signal == SIGTRAP && event == PTRACE_EVENT_EXEC) {
      ptrace(PTRACE_DETACH, pid, 0, 0);  // another program now (the sandbox's)
      continue;
    }
    if ((signal == SIGTRAP && event != 0) || (signal == SIGSTOP && event == 0)) {
      ptrace(PTRACE_CONT, pid, 0, 0);  // a fork or clone reported, or a new task's first stop
      continue;
    }
    if (signal == SIGTRAP) {
      struct user_regs_struct regs;
      if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
        long i = find_offset(&bp, regs.rip - 1 - base);
        if (i >= 0) {
          poke_byte(pid, regs.rip - 1, bp.saved[i]);
          regs.rip -= 1;
          ptrace(PTRACE_SETREGS, pid, 0, &regs);
          if (!bp.reported[i]) {
            bp.reported[i] = 1;
            printf("%lx\n", bp.offsets[i]);
          }
          ptrace(PTRACE_CONT, pid, 0, 0);
          continue;
        }
      }
    }
    ptrace(PTRACE_CONT, pid, 0, signal);  // the program's own signal
  }
  return WIFEXITED(program_status) ? WEXITSTATUS(program_status) : 128 + WTERMSIG(program_status);
}
