#include "cpu_handoff.hpp"

namespace sandcell::runtime {

CpuHandOff::CpuHandOff() {
  // More CPUs than a cpu_set_t holds (EINVAL) or an unknown current CPU: nothing to do.
  if (sched_getaffinity(0, sizeof original_, &original_) != 0) return;
  cpu_ = sched_getcpu();
  if (cpu_ < 0 || cpu_ >= CPU_SETSIZE || !CPU_ISSET(cpu_, &original_) || CPU_COUNT(&original_) < 2)
    return;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu_, &here);
  pinned_ = sched_setaffinity(0, sizeof here, &here) == 0;
}

void CpuHandOff::leave() {
  if (!pinned_) return;
  cpu_set_t others = original_;
  CPU_CLR(cpu_, &others);
  sched_setaffinity(0, sizeof others, &others);  // failing, it stays: the child waits a little
}

void CpuHandOff::restore() {
  if (!pinned_) return;
  sched_setaffinity(0, sizeof original_, &original_);
  pinned_ = false;
}

}  // namespace sandcell::runtime
