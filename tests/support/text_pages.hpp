#pragma once
// How much of a program's code a process has mapped: the pages of its executable mapping that
// are present in the process's page tables (cli/sandcell.order and its test).
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace sandcell::test {

struct TextPages {
  size_t total = 0, present = 0;
};

// The pages of `binary`'s executable mapping in process `pid`, and how many are mapped (bit 63
// of each /proc/PID/pagemap entry).
inline TextPages text_pages(pid_t pid, const std::string& binary) {
  TextPages pages;
  const std::string real = std::filesystem::canonical(binary).string();
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const int pagemap =
      open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (std::string line; pagemap >= 0 && std::getline(maps, line);) {
    unsigned long start = 0, end = 0;
    char perms[8] = "";
    if (sscanf(line.c_str(), "%lx-%lx %7s", &start, &end, perms) != 3 || perms[2] != 'x') continue;
    if (!line.ends_with(" " + real)) continue;
    for (uint64_t address = start; address < end; address += page) {
      uint64_t entry = 0;
      if (pread(pagemap, &entry, sizeof entry, static_cast<off_t>(address / page * sizeof entry)) !=
          sizeof entry)
        break;
      ++pages.total;
      if (entry >> 63) ++pages.present;
    }
  }
  if (pagemap >= 0) close(pagemap);
  return pages;
}

// The first pid in /proc/PID/task/PID/children, or -1.
inline pid_t first_child(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  return in >> child ? child : -1;
}

// Waits (up to 10 s) until the supervisor `pid` runs a sandbox's program: its child, the init,
// has a child of its own. That program's pid, or -1.
inline pid_t wait_for_sandbox_program(pid_t supervisor) {
  pid_t program = -1;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       program < 0 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    const pid_t init = first_child(supervisor);
    if (init > 0) program = first_child(init);
  }
  return program;
}

}  // namespace sandcell::test
