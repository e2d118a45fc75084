#include "image_paths.hpp"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "sandcell/runtime/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

}  // namespace

std::optional<struct stat> image_lstat(const std::vector<std::string>& layers, const std::string& path) {
  // Layers are sandcell's own unpacked directories; `path` has no ".." (lexically normal), and
  // parents are resolved by resolve_parents_in_image before this is asked.
  for (const std::string& layer : layers) {
    struct stat st {};
    if (lstat((layer + path).c_str(), &st) == 0) {
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
        std::error_code ec;
        target = fs::read_symlink(layer + next.string(), ec).string();
        if (!ec) break;
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
