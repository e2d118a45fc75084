#pragma once
// Bounds the executions a server runs: `max_running` at once, `max_queued` waiting for a slot;
// beyond that a request is turned away (HTTP 429) instead of piling up threads and memory.
#include <condition_variable>
#include <memory>
#include <mutex>

namespace sandcell::agent_service {

class AdmissionGate {
 public:
  AdmissionGate(int max_running, int max_queued) : max_running_(max_running), max_queued_(max_queued) {}

  // Holds a running slot until destroyed.
  class Ticket {
   public:
    explicit Ticket(AdmissionGate& gate) : gate_(gate) {}
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { gate_.leave(); }

   private:
    AdmissionGate& gate_;
  };

  // Waits for a running slot; nullptr at once when the queue is full too.
  std::unique_ptr<Ticket> enter();
  int running() const;
  int queued() const;

 private:
  void leave();
  const int max_running_, max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int running_ = 0, queued_ = 0;
};

}  // namespace sandcell::agent_service
