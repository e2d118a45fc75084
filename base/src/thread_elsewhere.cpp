#include "sandcell/base/thread_elsewhere.hpp"

#include "sandcell/base/error.hpp"

namespace sandcell::detail {
namespace {

void* run_elsewhere(void* arg) {
  auto* start = static_cast<ElsewhereStart*>(arg);
  start->started_on = sched_getcpu();
  // Best effort: left narrower, the thread still does its work, only on fewer CPUs.
  if (start->restore) sched_setaffinity(0, sizeof start->mask, &start->mask);
  start->body();  // a packaged_task: what the work throws stays in its future
  return nullptr;
}

}  // namespace

pthread_t start_elsewhere(ElsewhereStart& start) {
  pthread_attr_t attr;
  if (int err = pthread_attr_init(&attr); err != 0) throw Error(err, "pthread_attr_init");
  start.restore = false;
  start.creator_cpu = sched_getcpu();
  if (start.creator_cpu >= 0 && sched_getaffinity(0, sizeof start.mask, &start.mask) == 0 &&
      CPU_ISSET(start.creator_cpu, &start.mask)) {
    cpu_set_t others = start.mask;
    CPU_CLR(start.creator_cpu, &others);
    start.restore =
        CPU_COUNT(&others) > 0 && pthread_attr_setaffinity_np(&attr, sizeof others, &others) == 0;
  }
  pthread_t thread{};
  int err = pthread_create(&thread, &attr, run_elsewhere, &start);
  if (err == EINVAL && start.restore) {  // a CPU of the mask went offline meanwhile
    pthread_attr_destroy(&attr);
    pthread_attr_init(&attr);
    start.restore = false;
    err = pthread_create(&thread, &attr, run_elsewhere, &start);
  }
  pthread_attr_destroy(&attr);
  if (err != 0) throw Error(err, "start a thread");
  return thread;
}

}  // namespace sandcell::detail
