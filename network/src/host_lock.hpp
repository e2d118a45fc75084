#pragma once
// A host-wide lock for the few network steps that are read-then-write across processes: picking
// a free /30 for a veth, and deleting the nft table once it is empty.
#include "owned_fd.hpp"

namespace sandcell::network {

class HostNetworkLock {
 public:
  HostNetworkLock();             // blocks until held; throws Error
  ~HostNetworkLock() = default;  // closing the fd releases the flock
  HostNetworkLock(const HostNetworkLock&) = delete;
  HostNetworkLock& operator=(const HostNetworkLock&) = delete;

 private:
  OwnedFd fd_;
};

}  // namespace sandcell::network
