#include "http/admission_gate.hpp"

namespace sandcell::agent_service {

std::unique_ptr<AdmissionGate::Ticket> AdmissionGate::enter() {
  std::unique_lock lock(mutex_);
  if (running_ >= max_running_) {
    if (queued_ >= max_queued_) return nullptr;
    ++queued_;
    freed_.wait(lock, [&] { return running_ < max_running_; });
    --queued_;
  }
  ++running_;
  return std::make_unique<Ticket>(*this);
}

void AdmissionGate::leave() {
  {
    std::lock_guard lock(mutex_);
    --running_;
  }
  freed_.notify_one();
}

int AdmissionGate::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

int AdmissionGate::queued() const {
  std::lock_guard lock(mutex_);
  return queued_;
}

}  // namespace sandcell::agent_service
