#pragma once
// Shared checks for the hostile suite: every case asserts what the kernel did (the errno, signal
// or exit status the program saw) AND what sandcell reported (status, events) in its record.
#include <gtest/gtest.h>

#include <string>

#include "sandcell_cli.hpp"

namespace sandcell::test {

inline std::string status_of(const CliRun& r) {
  return r.record.is_object() ? r.record.value("status", "") : "no record: " + r.out + r.err;
}

inline std::string stdout_of(const CliRun& r) {
  return r.record.is_object() ? r.record.value("stdout", "") : "no record: " + r.out + r.err;
}

// How often the record says `name` was denied (0 when it is not listed).
inline uint64_t denied_count(const CliRun& r, const std::string& name) {
  if (!r.record.is_object()) return 0;
  for (const auto& entry : r.record["events"]["denied_syscalls"])
    if (entry["name"] == name) return entry["count"].get<uint64_t>();
  return 0;
}

inline bool no_denials(const CliRun& r) {
  return r.record.is_object() && r.record["events"]["denied_syscalls"].empty();
}

}  // namespace sandcell::test
