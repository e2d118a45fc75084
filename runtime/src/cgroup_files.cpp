#include "cgroup_files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <sstream>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime::cgroupfs {
namespace {

// Teardown waits at most this long for the kernel to empty a cgroup: SIGKILLed tasks exit
// quickly unless stuck in uninterruptible sleep, and gc / the supervisor must not hang on one.
constexpr std::chrono::milliseconds kTeardownLimit{2000};

std::optional<uint64_t> parse_u64(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// rmdir, retried while the kernel still counts exiting tasks (EBUSY). ENOENT is success: the
// directory is already gone.
void remove_dir(const std::string& dir) {
  int err = 0;
  wait_until(
      [&] {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
        err = errno;
        return err != EBUSY;
      },
      kTeardownLimit);
  if (err != 0 && ::access(dir.c_str(), F_OK) == 0) throw Error(err, "rmdir " + dir);
}

}  // namespace

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// A cgroup being removed (systemd stops an emptied scope while `sandcell-oci delete --force`
// reads it) answers ENODEV for its files, at the open or at the read (kernfs: the node is no
// longer active): as gone as ENOENT. CI's VM once failed delete --force on a cgroup.procs so.
std::optional<std::string> read_if_exists(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd && (errno == ENOENT || errno == ENODEV)) return std::nullopt;
  if (!fd) throw Error(errno, "open " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENODEV) return std::nullopt;
    check(n, "read " + path);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string read(const std::string& path) {
  auto text = read_if_exists(path);
  if (!text) throw Error(ENOENT, "read " + path);
  return *text;
}

void write(const std::string& path, std::string_view value) {
  const std::string step = "write " + std::string(value) + " to " + path;
  // O_TRUNC is a no-op on cgroupfs but keeps a fake tree in tests holding exactly the value.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  check(fd.get(), step);
  ssize_t n = check(::write(fd.get(), value.data(), value.size()), step);
  if (static_cast<size_t>(n) != value.size()) throw Error(EIO, step + " (short write)");
}

uint64_t keyed_value(const std::string& path, std::string_view key) {
  auto text = read_if_exists(path);
  if (!text) return 0;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::string_view view(line);
    if (view.size() > key.size() && view.starts_with(key) && view[key.size()] == ' ') {
      return parse_u64(view.substr(key.size() + 1)).value_or(0);
    }
  }
  return 0;
}

std::optional<uint64_t> single_value(const std::string& path) {
  auto text = read_if_exists(path);
  if (!text) return std::nullopt;
  return parse_u64(*text);
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) < 0 && errno != EEXIST) throw Error(errno, "mkdir " + path);
}

std::vector<std::string> tree_bottom_up(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
      auto below = tree_bottom_up(entry.path().string());
      out.insert(out.end(), below.begin(), below.end());
    }
  }
  if (exists(dir)) out.push_back(dir);
  return out;
}

std::vector<pid_t> procs(const std::string& dir) {
  std::vector<pid_t> pids;
  auto text = read_if_exists(dir + "/cgroup.procs");
  if (!text) return pids;
  std::istringstream lines(*text);
  long pid = 0;
  while (lines >> pid) {
    if (pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  return pids;
}

size_t kill_procs(const std::vector<std::string>& dirs) {
  size_t signalled = 0;
  for (const auto& dir : dirs) {
    for (pid_t pid : procs(dir)) {
      // ESRCH: it exited between the read and the kill, which is what we want anyway.
      if (::kill(pid, SIGKILL) < 0 && errno != ESRCH)
        throw Error(errno, "kill " + std::to_string(pid));
      ++signalled;
    }
  }
  return signalled;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool wait_closely(const std::function<bool()>& done, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::chrono::microseconds pause{20};
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds{1000});
  }
}

bool remove_if_empty(const std::vector<std::string>& dirs_bottom_up) {
  for (const auto& dir : dirs_bottom_up)
    if (::rmdir(dir.c_str()) < 0 && errno != ENOENT) return false;
  return true;
}

void kill_and_remove(const std::vector<std::string>& dirs_bottom_up) {
  // Each poll kills again: without a freezer a process may fork between two reads.
  wait_until([&] { return kill_procs(dirs_bottom_up) == 0; }, kTeardownLimit);
  // Try every directory, so one busy hierarchy does not leave the others behind.
  std::optional<Error> first_error;
  for (const auto& dir : dirs_bottom_up) {
    try {
      remove_dir(dir);
    } catch (const Error& e) {
      if (!first_error) first_error = e;
    }
  }
  if (first_error) throw *first_error;
}

void check_run_id(const std::string& run_id) {
  if (run_id.empty() || run_id == "." || run_id == ".." || run_id.find('/') != std::string::npos ||
      run_id.find('\0') != std::string::npos) {
    throw Error::invalid("invalid run id for a cgroup name: \"" + run_id + "\"");
  }
}

bool is_below_sandcell_parent(const std::string& path) {
  std::filesystem::path p(path);
  bool parent_seen = false;
  bool last_is_parent = false;
  for (const auto& part : p) {
    if (part == "..") return false;
    last_is_parent = part == kCgroupParent;
    parent_seen = parent_seen || last_is_parent;
  }
  // "sandcell" itself (the shared parent) is never removed, only what lies below it.
  return parent_seen && !last_is_parent && p.filename() != "" && p.filename() != ".";
}

}  // namespace sandcell::runtime::cgroupfs
