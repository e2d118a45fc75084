#pragma once
// A worker thread that starts on another CPU than the thread that makes it.
//
// Linux places a new thread on its creator's CPU when it judges that better than waking an idle
// one (wake_up_new_task; on this project's 2-vCPU VMs, 31-34 of 40 times). If the creator goes
// on working, the new thread waits for that CPU until the creator blocks or is preempted, while
// the other CPU idles: `sandcell code`'s workspace disk thread started ~1.2 ms after it was made
// (median), which was most of the time the call then waited for the disk. Made with its
// affinity set to the creator's other CPUs, it runs at once on one of them (0.15 ms, the wake of
// an idle vCPU); its first step gives it the creator's whole mask back. With no other CPU in the
// creator's mask it is an ordinary thread. bench/README.md, "Session 36".
#include <pthread.h>
#include <sched.h>

#include <functional>
#include <future>
#include <utility>

namespace sandcell {

namespace detail {
struct ElsewhereStart {
  std::function<void()> body;
  cpu_set_t mask{};      // the creator's, restored by the thread first
  bool restore = false;  // the thread was made with a narrower mask
  int creator_cpu = -1;  // where the creator ran when it made the thread
  int started_on = -1;   // where the thread ran first
};
// pthread_create with the creator's other CPUs as the first mask; throws what it returns.
pthread_t start_elsewhere(ElsewhereStart& start);
}  // namespace detail

// Runs `work` on such a thread at construction; get() waits for it and returns its value or
// rethrows what it threw (once). The destructor waits for it too (and then destroys an unclaimed
// value), as a std::async future's does.
template <class T>
class ThreadElsewhere {
 public:
  explicit ThreadElsewhere(std::function<T()> work)
      : task_(std::move(work)), result_(task_.get_future()) {
    start_.body = [this] { task_(); };
    thread_ = detail::start_elsewhere(start_);
    joinable_ = true;
  }
  ~ThreadElsewhere() { join(); }
  ThreadElsewhere(const ThreadElsewhere&) = delete;
  ThreadElsewhere& operator=(const ThreadElsewhere&) = delete;

  T get() {
    join();
    return result_.get();
  }
  // After get(): the CPU the creator ran on, and the one the thread started on (-1: unknown).
  int creator_cpu() const { return start_.creator_cpu; }
  int started_on() const { return start_.started_on; }

 private:
  void join() {
    if (joinable_) pthread_join(thread_, nullptr);
    joinable_ = false;
  }

  std::packaged_task<T()> task_;
  std::future<T> result_;
  detail::ElsewhereStart start_;
  pthread_t thread_{};
  bool joinable_ = false;
};

}  // namespace sandcell
