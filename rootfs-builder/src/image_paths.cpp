#include "image_paths.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "sandcell/base/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

}  // namespace

namespace {

// The directory holding `path`'s last component in one layer, reached without following any
// symlink (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink among a lower layer's directories
// must not lead the lookup to the host (a host directory's mode and owner into the image).
UniqueFd parent_in_layer(const std::string& layer, const std::string& path) {
  UniqueFd root(::open(layer.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return root;
  std::string parent = fs::path(path).parent_path().relative_path().string();
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return UniqueFd(static_cast<int>(
      ::syscall(SYS_openat2, root.get(), parent.empty() ? "." : parent.c_str(), &how, sizeof how)));
}

std::string last_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return name.empty() ? "." : name;
}

}  // namespace

std::optional<struct stat> image_lstat(const std::vector<std::string>& layers, const std::string& path) {
  // `path` has no ".." (lexically normal), and parents are resolved by resolve_parents_in_image
  // before this is asked.
  for (const std::string& layer : layers) {
    UniqueFd parent = parent_in_layer(layer, path);
    struct stat st {};
    if (parent && ::fstatat(parent.get(), last_name(path).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (is_whiteout(st)) return std::nullopt;
      return st;
    }
  }
  return std::nullopt;
}

namespace {

std::string resolve(const std::vector<std::string>& layers, const std::string& path, int hops) {
  fs::path normal = fs::path(path).lexically_normal();
  fs::path resolved = "/";
  std::vector<std::string> parts;
  for (const auto& part : normal.relative_path()) parts.push_back(part.string());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    fs::path next = resolved / parts[i];
    auto st = image_lstat(layers, next.string());
    if (st && S_ISLNK(st->st_mode)) {
      if (++hops > 40) throw Error(ELOOP, "resolve " + path + " in the image");
      std::string target;
      for (const std::string& layer : layers) {
        UniqueFd parent = parent_in_layer(layer, next.string());
        char buffer[4096];
        ssize_t n = parent ? ::readlinkat(parent.get(), last_name(next.string()).c_str(), buffer, sizeof buffer) : -1;
        if (n < 0) continue;
        target.assign(buffer, static_cast<size_t>(n));
        break;
      }
      fs::path joined = target.rfind('/', 0) == 0 ? fs::path(target) : resolved / target;
      // Re-resolve the target's own parents: restart from the root with the new prefix.
      std::vector<std::string> rest(parts.begin() + static_cast<long>(i) + 1, parts.end());
      fs::path again = joined.lexically_normal();
      for (const auto& r : rest) again /= r;
      return resolve(layers, again.string().rfind("/", 0) == 0 ? again.string() : "/" + again.string(), hops);
    }
    resolved = next;
  }
  if (!parts.empty()) resolved /= parts.back();
  return resolved.lexically_normal().string();
}

}  // namespace

std::string resolve_parents_in_image(const std::vector<std::string>& layers, const std::string& path) {
  return resolve(layers, path, 0);
}

}  // namespace sandcell::rootfs_builder
