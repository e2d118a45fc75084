#pragma once
// The child starts on the supervisor's CPU, and the supervisor moves to another one.
//
// clone3 puts a new task on an idle CPU when there is one; on a VM that CPU's vCPU is halted,
// and waking it (an IPI, the host scheduling the vCPU) held the child back ~0.2-0.3 ms, all of
// it on the critical path of a start: the supervisor's own share of the work after the clone
// (cgroups, the seccomp program) is shorter than the child's mounts. So the supervisor clones
// while pinned to the CPU it runs on (the child inherits that and waits on it), then narrows
// itself to the other CPUs: it leaves, and the child runs at once where the supervisor was,
// while the waking of another CPU delays only the supervisor. The child restores the original
// mask before anything else (ChildPlan::cpus), so the program gets sandcell's own mask.
//
// The supervisor keeps to the other CPUs until the run is over (the hand-off goes out of scope).
// With its whole mask back right after "go", the kernel woke it where the child ran, when the
// child sent its seccomp listener, and it ran there first: traced, the child's sendmsg() took
// ~0.18 ms instead of a few us, just before the program's execve. Pinned away, it wakes on its own
// CPU. (In the whole start the gain is within this VM's noise.) A program that wants every CPU
// still has them; the supervisor only pumps output and waits.
// Measured in bench/README.md ("Session 7", "Session 9").
#include <sched.h>

namespace sandcell::runtime {

class CpuHandOff {
 public:
  // Pins the calling thread to its current CPU, if its mask holds another CPU to go to (else,
  // or if any step fails, the hand-off does nothing: it is an optimisation only).
  CpuHandOff();
  ~CpuHandOff() { restore(); }
  CpuHandOff(const CpuHandOff&) = delete;
  CpuHandOff& operator=(const CpuHandOff&) = delete;

  // The mask the child must restore, or nullptr when nothing was pinned.
  const cpu_set_t* original() const { return pinned_ ? &original_ : nullptr; }
  // After the clone: the caller narrows itself to the other CPUs of its mask, for the rest of
  // the run.
  void leave();
  // The caller's own mask again (idempotent).
  void restore();

 private:
  cpu_set_t original_{};
  int cpu_ = -1;
  bool pinned_ = false;
};

}  // namespace sandcell::runtime
