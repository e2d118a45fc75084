#include "supervisor.hpp"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "child_messages.hpp"
#include "denied_syscall_log.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

constexpr long kCpuPollNs = 50'000'000;  // CPU-time limit checked every 50 ms
constexpr int kDrainAfterExitMs = 2000;  // output still arriving after pid 1 is gone
// A program that said it is done (ChildMessage::ProgramDone) waits in a sleep that freezes at
// once; what else runs in its sandbox may take longer. Past this the sandbox is killed instead.
constexpr std::chrono::microseconds kFreezeAtDone{100'000};

UniqueFd make_timer(double first_s, long interval_ns) {
  UniqueFd fd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!fd) throw Error(errno, "timerfd_create");
  itimerspec spec{};
  double whole = std::floor(first_s);
  spec.it_value.tv_sec = static_cast<time_t>(whole);
  spec.it_value.tv_nsec = static_cast<long>((first_s - whole) * 1e9);
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  spec.it_interval.tv_nsec = interval_ns;
  check(timerfd_settime(fd.get(), 0, &spec, nullptr), "timerfd_settime");
  return fd;
}

void watch(int epfd, int fd) {
  if (fd < 0) return;
  epoll_event event{.events = EPOLLIN, .data = {.fd = fd}};
  check(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event), "epoll_ctl add");
}

void unwatch(int epfd, int fd) {
  epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nullptr);
}

void consume(int fd) {
  char buffer[sizeof(signalfd_siginfo)];
  ssize_t ignored = read(fd, buffer, sizeof buffer);
  (void)ignored;
}

class Loop {
 public:
  explicit Loop(const Supervised& run) : run_(run), epoll_(epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_) throw Error(errno, "epoll_create1");
    for (int fd : {run.pidfd, run.out.fd(), run.err.fd(), run.signal_fd, run.sync_fd})
      watch(epoll_.get(), fd);
    if (run.hand_over) {
      watch(epoll_.get(), run.hand_over->fd);  // the timers wait for the request
    } else {
      arm_timers(run.limits.wall_s, run.limits.cpu_s);
    }
  }

  SupervisionOutcome run() {
    while (!outcome_.frozen && (!(reaped_ || tree_ended_) || run_.out.open() || run_.err.open())) {
      const bool over = reaped_ || tree_ended_;
      int timeout = over ? remaining_drain_ms() : -1;
      if (over && timeout == 0) break;  // a stray writer kept a pipe open: stop waiting
      epoll_event events[8];
      int n = epoll_wait(epoll_.get(), events, 8, timeout);
      if (n < 0 && errno == EINTR) continue;
      check(n, "epoll_wait");
      for (int i = 0; i < n; ++i) handle(events[i].data.fd, events[i].events);
    }
    run_.out.close();
    run_.err.close();
    // A failure written just before the child exited may still sit unread in the socket
    // (nothing follows the init's report).
    while (!sync_closed_ && !outcome_.child_failure && !program_wait_status_)
      handle_child_message_or_stop();
    if (program_wait_status_) outcome_.wait_status = *program_wait_status_;
    outcome_.init_still_exiting = tree_ended_ && !reaped_;
    if (denials_) outcome_.denied_syscalls = denials_->denied();
    return outcome_;
  }

 private:
  void handle(int fd, uint32_t events) {
    if (fd == run_.out.fd() || fd == run_.err.fd()) {
      OutputPump& pump = fd == run_.out.fd() ? run_.out : run_.err;
      pump.drain();
      if (!pump.open()) {
        unwatch(epoll_.get(), fd);
        pump.close();
      }
      // Output past the limit is the run's status also when it arrives after the program's exit
      // (the last of a flood the pipe still held), with nothing left to stop.
      if (pump.truncated() && !outcome_.output_limit) {
        if (reaped_ || tree_ended_)
          outcome_.output_limit = !killed_;
        else
          stop([&] { outcome_.output_limit = true; });
      }
    } else if (fd == run_.pidfd) {
      reap();
    } else if (outside_ && fd == outside_->pidfd.get()) {
      outside_exited();
    } else if (outside_ && fd == outside_->report.get()) {
      outside_report(events);
    } else if (run_.hand_over && fd == run_.hand_over->fd) {
      hand_over();
    } else if (fd == wall_.get()) {
      consume(fd);
      stop([&] { outcome_.wall_timeout = true; });
    } else if (fd == cpu_tick_.get()) {
      consume(fd);
      if (run_.cgroup.cpu_ns() - outcome_.cpu_ns_at_hand_over >=
          static_cast<uint64_t>(*cpu_s_ * 1e9))
        stop([&] { outcome_.cpu_timeout = true; });
    } else if (fd == run_.sync_fd) {
      handle_child_message();
    } else if (denials_ && fd == denials_->fd()) {
      if (denials_->answer_pending())
        stop([&] { outcome_.seccomp_kill = denials_->kill_reason(); });
      // Every task of the filter has exited: nothing more can come, and the level-triggered
      // hang-up would otherwise spin this loop until the reap (~700 wake-ups per run measured).
      if (events & EPOLLHUP) unwatch(epoll_.get(), fd);
    } else if (fd == run_.signal_fd) {
      signalfd_siginfo info{};
      if (read(fd, &info, sizeof info) == sizeof info)
        stop([&] { outcome_.interrupted_by = static_cast<int>(info.ssi_signo); });
    }
  }

  void arm_timers(std::optional<double> wall_s, std::optional<double> cpu_s) {
    cpu_s_ = cpu_s;
    if (wall_s) {
      wall_ = make_timer(*wall_s, 0);
      watch(epoll_.get(), wall_.get());
    }
    if (cpu_s) {
      cpu_tick_ = make_timer(0.05, kCpuPollNs);
      watch(epoll_.get(), cpu_tick_.get());
    }
  }

  // The request of a pooled run: from here its clock runs, then the program may go.
  void hand_over() {
    uint64_t count;
    ssize_t ignored = read(run_.hand_over->fd, &count, sizeof count);
    (void)ignored;
    unwatch(epoll_.get(), run_.hand_over->fd);
    if (reaped_ || tree_ended_ || killed_) return;  // too late: the program is gone
    std::optional<HandOverTerms> terms = run_.hand_over->take();
    if (!terms) {
      stop([&] { outcome_.interrupted_by = SIGTERM; });
      return;
    }
    if (denials_) {
      if (denials_->answer_pending()) {
        stop([&] { outcome_.seccomp_kill = denials_->kill_reason(); });
        return;
      }
      denials_->restart();
    }
    outcome_.handed_over_at = std::chrono::steady_clock::now();
    outcome_.cpu_ns_at_hand_over = run_.cgroup.cpu_ns();
    outcome_.terms = *terms;
    run_.out.restart(terms->output_bytes.value_or(~0ull));
    run_.err.restart(terms->output_bytes.value_or(~0ull));
    arm_timers(terms->wall_s, terms->cpu_s);
    run_.hand_over->go();
  }

  void handle_child_message_or_stop() {
    std::optional<ReceivedMessage> received = receive_child_message(run_.sync_fd);
    if (!received || received->message.kind < 0) {
      sync_closed_ = true;
      return;
    }
    if (received->message.kind == ChildMessage::ProgramExited)
      program_exited(received->message);
    else if (received->message.kind != ChildMessage::SeccompListener &&
             received->message.kind != ChildMessage::ProgramDone &&
             received->message.kind != ChildMessage::AwaitingProgram)
      outcome_.child_failure = received->message;
  }

  // Returns false when nothing was waiting (or the socket closed).
  bool handle_child_message() {
    std::optional<ReceivedMessage> received = receive_child_message(run_.sync_fd);
    if (received && received->message.kind < 0) return false;  // spurious wake-up
    if (!received) {  // EOF: the init exited (the program's copy closed at execve)
      unwatch(epoll_.get(), run_.sync_fd);
      sync_closed_ = true;
      return false;
    }
    if (received->message.kind == ChildMessage::SeccompListener && received->fd && run_.notify) {
      denials_.emplace(std::move(received->fd), *run_.notify);
      watch(epoll_.get(), denials_->fd());
    } else if (received->message.kind == ChildMessage::ProgramExited) {
      program_exited(received->message);
    } else if (received->message.kind == ChildMessage::ProgramDone) {
      program_done(received->message);
    } else if (received->message.kind == ChildMessage::AwaitingProgram) {
      start_outside();
    } else if (received->message.kind == ChildMessage::SetupFailed ||
               received->message.kind == ChildMessage::ExecFailed) {
      outcome_.child_failure = received->message;
      stop([] {});
    }
    return true;
  }

  void program_exited(const ChildMessage& message) {
    program_wait_status_ = message.wait_status;
    // The run's cgroups can go before the init's exit when it is in none of them.
    const bool init_out = message.left_cgroups || run_.cgroup.mode() == CgroupHost::Mode::None;
    // Not after a kill: the status to report is then the init's.
    if (message.tree_ended && init_out && !killed_ && !reaped_) {
      tree_ended_ = true;
      outcome_.usage = message.children_usage;
      start_drain_deadline();
    }
    notify_program_exit(init_out);
  }

  // A pooled program's word that it is done (kProgramDoneSignal, sandbox.hpp), taken as its exit
  // with that status: the sandbox is frozen where it is, the output it holds is read, and the
  // loop ends with the sandbox still there (SupervisionOutcome::frozen), for the caller to
  // answer and then kill. Not before the hand-over (nothing of the program's runs then), nor
  // once the run is ending anyway. A sandbox that does not freeze in time is killed, as the init
  // ends what a program leaves running, and the record waits for its end, with that status.
  void program_done(const ChildMessage& message) {
    if (!outcome_.handed_over_at || reaped_ || tree_ended_ || killed_ || program_wait_status_)
      return;
    program_wait_status_ = message.wait_status;
    if (!run_.cgroup.freeze_within(kFreezeAtDone)) {
      killed_ = true;
      kill_sandbox(run_);
      return;
    }
    outcome_.frozen = true;
    for (OutputPump* pump : {&run_.out, &run_.err}) {
      while (pump->drain()) {
      }
      // As for output that arrives after the program's exit: its status, nothing left to stop.
      if (pump->truncated()) outcome_.output_limit = true;
    }
    notify_program_exit(false);
  }

  // RunOptions::outside_program: the init is confined, out of the run's cgroups, and waits.
  void start_outside() {
    if (outside_ || killed_ || reaped_) return;
    try {
      if (!run_.start_outside) throw Error(EPROTO, "the init waits for a program from outside");
      outside_ = run_.start_outside();
      if (!outside_->pidfd) throw Error(EINVAL, "no pidfd for the program from outside");
    } catch (const Error& e) {
      fail_setup(e.code().value(), e.what());
      return;
    }
    // The init honours the program's word (program_done_signal) from this pid only.
    const pid_t pid = outside_->pid_in_sandbox;
    if (send(run_.sync_fd, &pid, sizeof pid, MSG_NOSIGNAL) < 0 && errno != EPIPE)
      throw Error(errno, "tell the init the program's pid");
    watch(epoll_.get(), outside_->pidfd.get());
    watch(epoll_.get(), outside_->report.get());
  }

  // The program from outside has exited: its status stands for the init's report, and the
  // sandbox ends (what the program left running with it), as the init would end it.
  void outside_exited() {
    unwatch(epoll_.get(), outside_->pidfd.get());
    if (program_wait_status_) return;
    program_wait_status_ = run_.outside_wait_status ? run_.outside_wait_status() : 0;
    notify_program_exit(false);
    kill_sandbox(run_);
  }

  // sandcell_confine()'s report: the seccomp listener, or the step that failed.
  void outside_report(uint32_t events) {
    std::optional<ReceivedMessage> received;
    try {
      received = receive_outside_report(outside_->report.get());
    } catch (const Error&) {
    }
    if (!received) {  // EOF: the program runs (or is gone)
      unwatch(epoll_.get(), outside_->report.get());
      return;
    }
    if (received->message.kind < 0) {  // nothing queued
      if (events & (EPOLLHUP | EPOLLERR)) unwatch(epoll_.get(), outside_->report.get());
      return;
    }
    // One listener, the first: the library sends it once and closes the socket before the
    // program runs.
    if (received->message.kind == ChildMessage::SeccompListener && received->fd && run_.notify &&
        !denials_) {
      denials_.emplace(std::move(received->fd), *run_.notify);
      watch(epoll_.get(), denials_->fd());
    } else if (received->message.kind == ChildMessage::SetupFailed) {
      outcome_.child_failure = received->message;
      stop([] {});
    }
  }

  void fail_setup(int err, const std::string& step) {
    ChildMessage message{.kind = ChildMessage::SetupFailed, .err = err};
    snprintf(message.step, sizeof message.step, "%s", step.c_str());
    outcome_.child_failure = message;
    stop([] {});
  }

  void notify_program_exit(bool init_left_cgroups) {
    if (exit_notified_) return;
    exit_notified_ = true;
    if (run_.on_program_exit) run_.on_program_exit(init_left_cgroups);
  }

  // Records why the sandbox is stopped (only the first reason counts) and kills it.
  template <typename Why>
  void stop(Why why) {
    if (reaped_ || tree_ended_ || killed_) return;  // nothing left to kill
    why();
    killed_ = true;
    kill_sandbox(run_);
  }

  void reap() {
    if (reaped_) return;
    // What the init sent before it exited comes first: its report says whether it left the
    // run's cgroups, which can then go while it finishes exiting (Supervised::on_program_exit).
    while (!sync_closed_ && !exit_notified_ && handle_child_message()) {
    }
    rusage usage{};
    if (wait4(run_.pid, &outcome_.wait_status, WNOHANG, &usage) != run_.pid) return;
    if (!tree_ended_) outcome_.usage = usage;  // else the init's report has what it reaped
    reaped_ = true;
    notify_program_exit(false);
    unwatch(epoll_.get(), run_.pidfd);
    // pid 1 is gone, so the kernel has killed the rest of its namespace and the pipes close.
    if (!tree_ended_) start_drain_deadline();
  }

  // The sandbox's processes are gone: give the last output a bounded time to arrive.
  void start_drain_deadline() {
    drain_deadline_ =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainAfterExitMs);
  }

  int remaining_drain_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        drain_deadline_ - std::chrono::steady_clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
  }

  const Supervised& run_;
  UniqueFd epoll_, wall_, cpu_tick_;
  std::optional<double> cpu_s_;
  SupervisionOutcome outcome_;
  std::optional<DeniedSyscallLog> denials_;
  std::optional<int> program_wait_status_;
  std::optional<OutsideStarted> outside_;
  bool reaped_ = false, killed_ = false, sync_closed_ = false, exit_notified_ = false;
  bool tree_ended_ = false;  // the init's report: it ended and reaped the rest of the tree
  std::chrono::steady_clock::time_point drain_deadline_;
};

}  // namespace

void kill_sandbox(const Supervised& run) {
  syscall(SYS_pidfd_send_signal, run.pidfd, SIGKILL, nullptr, 0);
  run.cgroup.kill_all();
}

SupervisionOutcome supervise(const Supervised& run) {
  return Loop(run).run();
}

}  // namespace sandcell::runtime
