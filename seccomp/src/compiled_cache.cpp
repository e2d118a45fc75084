#include "sandcell/base/rootless.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sstream>

#include "sandcell/base/error.hpp"
#include "syscall_table.hpp"

namespace sandcell::seccomp {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether nobody but this user (and root) can change what `st` holds or names.
bool writable_only_by_us(const struct stat& st) {
  const bool owner_ok = st.st_uid == 0 || st.st_uid == geteuid();
  return owner_ok && ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (st.st_mode & S_ISVTX) != 0);
}

// A compiled filter is what the sandbox runs under, so an entry is trusted only when no other
// user could have written it or swapped a directory above it: the cache directory and every
// ancestor owned by root or by us and not writable by group or others (a sticky directory such
// as /tmp is fine: others cannot rename what is ours in it). Otherwise another local user could
// plant an allow-everything program under the name our profile hashes to.
bool trusted_directory(const fs::path& dir) {
  if (!dir.is_absolute()) return false;
  fs::path prefix;
  for (const fs::path& part : dir) {
    prefix /= part;
    struct stat st {};
    if (stat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !writable_only_by_us(st))
      return false;
  }
  return true;
}

// The entry itself: a regular file of ours that only we can write, opened without following a
// symlink and read through the fd that was checked.
std::optional<std::string> read_trusted_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> bytes;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    bytes.emplace(static_cast<size_t>(st.st_size), '\0');
    if (pread(fd, bytes->data(), bytes->size(), 0) != st.st_size) bytes.reset();
  }
  close(fd);
  return bytes;
}

// Everything the compiled program depends on, as one string; compared in full on every hit.
std::string cache_key(const std::string& profile_bytes, const ProfileContext& context, const CompileOptions& options) {
  const scmp_version* version = seccomp_version();
  std::string key = "sandcell-seccomp-cache 2\n" + context.arch + "\n" + std::to_string(context.kernel.major) + "." +
                    std::to_string(context.kernel.minor) + "\nlibseccomp " + std::to_string(version->major) + "." +
                    std::to_string(version->minor) + "." + std::to_string(version->micro) + "\nreport " +
                    (options.report_denials ? "1" : "0") + "\ncaps";
  for (const std::string& cap : context.capabilities) key += " " + cap;
  return key + "\n" + profile_bytes;
}

// The entry is binary, not JSON: parsing ~1000 numbers of JSON cost more than it saved.
// Layout: u64 key size, key, u32 name size, name, u32 flags, u32 count, sock_filter[count],
// u8 has_notify, then i32 default_errno, u8 kill, u32 arch, u32 n, {u64 key, i32 errno}[n].
class Writer {
 public:
  template <typename T>
  void put(const T& value) { bytes.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void put_string(const std::string& text) {
    put<uint64_t>(text.size());
    bytes += text;
  }
  std::string bytes;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T value{};
    if (pos_ + sizeof value > bytes_.size()) throw std::out_of_range("seccomp cache entry");
    memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }
  std::string_view get_string() {
    uint64_t size = get<uint64_t>();
    if (pos_ + size > bytes_.size()) throw std::out_of_range("seccomp cache entry");
    std::string_view text(bytes_.data() + pos_, size);
    pos_ += size;
    return text;
  }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

std::string encode(const std::string& key, const Program& program) {
  Writer w;
  w.put_string(key);
  w.put_string(program.name);
  w.put<uint32_t>(program.flags);
  w.put<uint32_t>(static_cast<uint32_t>(program.instructions.size()));
  for (const sock_filter& f : program.instructions) w.put(f);
  w.put<uint8_t>(program.notify ? 1 : 0);
  if (!program.notify) return w.bytes;
  w.put<int32_t>(program.notify->default_errno);
  w.put<uint8_t>(program.notify->kill_on_foreign_abi ? 1 : 0);
  w.put<uint32_t>(program.notify->native_arch);
  w.put<uint32_t>(static_cast<uint32_t>(program.notify->errno_for.size()));
  for (const auto& [nr, err] : program.notify->errno_for) {
    w.put<uint64_t>(nr);
    w.put<int32_t>(err);
  }
  return w.bytes;
}

Program decode(Reader& r) {
  Program program;
  program.name = r.get_string();
  program.flags = r.get<uint32_t>();
  program.instructions.resize(r.get<uint32_t>());
  for (sock_filter& f : program.instructions) f = r.get<sock_filter>();
  if (r.get<uint8_t>() == 0) return program;
  NotifyPlan plan;
  plan.default_errno = r.get<int32_t>();
  plan.kill_on_foreign_abi = r.get<uint8_t>() != 0;
  plan.native_arch = r.get<uint32_t>();
  for (uint32_t n = r.get<uint32_t>(); n > 0; --n) {
    uint64_t nr = r.get<uint64_t>();
    plan.errno_for[nr] = r.get<int32_t>();
  }
  plan.name_of = &syscall_name;
  program.notify = plan;
  return program;
}

std::string cache_path(const std::string& cache_dir, const std::string& key) {
  char name[32];
  snprintf(name, sizeof name, "%016zx.bin", std::hash<std::string>{}(key));
  return cache_dir + "/" + name;
}

std::optional<Program> cached(const std::string& path, const std::string& key) {
  std::optional<std::string> bytes = read_trusted_file(path);
  if (!bytes) return std::nullopt;
  try {
    Reader r(*bytes);
    if (r.get_string() != key) return std::nullopt;  // another profile with the same hash
    return decode(r);
  } catch (const std::out_of_range&) {
    return std::nullopt;  // a damaged entry is recompiled and replaced
  }
}

// Written to a new file of our own (O_EXCL: never through a name someone placed) and renamed.
void store(const std::string& path, const std::string& key, const Program& program) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string bytes = encode(key, program);
  const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  close(fd);
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

// Missing directories are made private (0700; mkdir's mode, not umask(), which is the whole
// process's and servers compile on many threads); used only when trusted_directory() holds.
bool usable_cache_directory(const std::string& cache_dir) {
  if (cache_dir.empty() || cache_dir[0] != '/') return false;
  fs::path prefix;
  for (const fs::path& part : fs::path(cache_dir)) {
    prefix /= part;
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return trusted_directory(cache_dir);
}

// The profile's bytes, which the cache key hashes: a shipped profile's from wherever
// load_profile_arg takes it (a file, else the compiled-in copy).
std::optional<std::string> profile_bytes(const std::string& arg) {
  if (arg == "default" || arg == "code") return shipped_profile(arg).text;
  return read_file(arg);
}

}  // namespace

std::optional<Program> compile_profile_arg(const std::string& arg, const ProfileContext& context,
                                                          const CompileOptions& options,
                                                          const std::string& cache_dir) {
  if (arg == "unconfined") return std::nullopt;
  std::optional<std::string> bytes;
  if (arg != "builtin" && !arg.empty() && !cache_dir.empty()) bytes = profile_bytes(arg);
  if (bytes && !usable_cache_directory(cache_dir)) bytes.reset();
  std::string key = bytes ? cache_key(*bytes, context, options) : "";
  std::string path = bytes ? cache_path(cache_dir, key) : "";
  if (bytes)
    if (auto hit = cached(path, key)) return hit;
  std::optional<Profile> profile = load_profile_arg(arg, context);
  if (!profile) return std::nullopt;
  Program program = compile(*profile, options);
  if (bytes) store(path, key, program);
  return program;
}

Source cached_profile(std::string arg, ProfileContext context, CompileOptions options,
                      std::string cache_dir) {
  return Source([arg = std::move(arg), context = std::move(context), options,
                 cache_dir = std::move(cache_dir)] {
    std::optional<Program> program =
        compile_profile_arg(arg, context, options, cache_dir.empty() ? default_cache_dir() : cache_dir);
    if (program) program->name = arg;
    return program;
  });
}

std::string default_cache_dir() {
  if (!runtime::rootless()) return "/var/cache/sandcell/seccomp";
  const char* cache = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  if (cache != nullptr && *cache == '/') return std::string(cache) + "/sandcell/seccomp";
  // Without a home there is no place of this user's own: no cache (never a shared /tmp).
  if (home != nullptr && *home == '/') return std::string(home) + "/.cache/sandcell/seccomp";
  return "";
}

}  // namespace sandcell::seccomp
