#pragma once
// Reading and writing cgroupfs control files, and the kill / wait / rmdir steps that v1, v2 and
// gc share. Internal to the runtime library.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::runtime::cgroupfs {

bool exists(const std::string& path);
// The whole file; throws Error("read <path>").
std::string read(const std::string& path);
// nullopt when the file does not exist (a controller that is not enabled has no files), or its
// cgroup was removed meanwhile (ENODEV).
std::optional<std::string> read_if_exists(const std::string& path);
// One write() of the value, as the kernel parses a control file write as a unit; throws
// Error("write <value> to <path>").
void write(const std::string& path, std::string_view value);

// The number after `key` in a "key value" per line file (cpu.stat, memory.events); 0 when the
// file or the key is missing.
uint64_t keyed_value(const std::string& path, std::string_view key);
// A file holding one number (cpuacct.usage, memory.peak); nullopt when missing.
std::optional<uint64_t> single_value(const std::string& path);

// mkdir that accepts an existing directory.
void make_dir(const std::string& path);

// `dir` and every cgroup below it, deepest first (the order rmdir needs).
std::vector<std::string> tree_bottom_up(const std::string& dir);
// Pids listed in <dir>/cgroup.procs; empty when the directory is gone.
std::vector<pid_t> procs(const std::string& dir);
// SIGKILLs every pid in the cgroup.procs of each directory; returns how many it signalled.
size_t kill_procs(const std::vector<std::string>& dirs);
// Polls `done` until it is true or `limit` passes; returns the last answer.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit);
// The same for a wait on the way to an answer: looks again after 20 us, then twice as long each
// time up to 1 ms, instead of every 5 ms.
bool wait_closely(const std::function<bool()>& done, std::chrono::microseconds limit);
// The end of a normal run: the sandbox's pid 1 is gone, so the kernel has killed and reaped
// everything in it. One rmdir per directory, in order, with no listing or reading; true when
// all are gone. The first that is still busy (a task, a child cgroup) stops it: false, and the
// caller takes the kill_and_remove() path. Saves ~0.5 ms per run over listing five v1 trees.
bool remove_if_empty(const std::vector<std::string>& dirs_bottom_up);
// Kills and waits (bounded) until no directory lists a process, then rmdirs them in order.
// Throws Error naming the directory that could not be removed.
void kill_and_remove(const std::vector<std::string>& dirs_bottom_up);

// A run id becomes a directory name: no '/', not "." or "..", not empty.
void check_run_id(const std::string& run_id);
// True when some component above the last one is exactly kCgroupParent and no component is
// "..": the only directories sandcell may remove.
bool is_below_sandcell_parent(const std::string& path);

}  // namespace sandcell::runtime::cgroupfs
