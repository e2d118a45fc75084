// COPY and ADD: sources are staged (matched, copied, owned and moded as the flags say), hashed
// for the cache key, then placed at the destination inside a fresh directory that becomes the
// step's layer. Nothing runs inside the image, so COPY works on any image, even FROM scratch.
#include <archive.h>
#include <archive_entry.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "build_steps.hpp"
#include "file_copy.hpp"
#include "image_paths.hpp"
#include "sandcell/rootfs_builder/dockerignore.hpp"
#include "sandcell/rootfs_builder/image_user.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/rootfs_builder/loaded_libs.hpp"
#include "sandcell/runtime/error.hpp"
#include "sandcell/runtime/number.hpp"
#include "url_fetch.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

struct StagedSource {
  std::string path;  // the staged copy
  std::string name;  // the base name it keeps at a directory destination
  bool is_dir = false;
  bool extract = false;  // ADD of a local tar archive: unpacked at the destination
};

std::vector<std::string> list_tree(const std::string& root) {
  std::vector<std::string> paths;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
    paths.push_back(fs::relative(it->path(), root).string());
  return paths;
}

bool is_tar_archive(const std::string& path) {
  std::unique_ptr<archive, decltype(&archive_read_free)> a(libarchive().read_new(),
                                                           libarchive().read_free);
  libarchive().read_support_filter_all(a.get());
  libarchive().read_support_format_tar(a.get());
  if (libarchive().read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) return false;
  archive_entry* entry = nullptr;
  return libarchive().read_next_header(a.get(), &entry) == ARCHIVE_OK;
}

// Copies `match` (relative to root; "." for all of it) keeping only the paths in `allowed` (the
// context minus .dockerignore); nullptr allows everything.
void copy_match(const std::string& root, const std::string& match, const std::string& to,
                const std::set<std::string>* allowed, const CopyOwnership& owner) {
  copy_tree(match == "." ? root : root + "/" + match, to, owner);
  if (allowed == nullptr || !fs::is_directory(fs::symlink_status(to))) return;
  std::vector<fs::path> excluded;
  for (auto it = fs::recursive_directory_iterator(to); it != fs::recursive_directory_iterator(); ++it) {
    std::string relative = (fs::path(match) / fs::relative(it->path(), to)).lexically_normal().string();
    if (!allowed->count(relative)) {
      excluded.push_back(it->path());
      if (it->is_directory()) it.disable_recursion_pending();
    }
  }
  for (const auto& path : excluded) fs::remove_all(path);
}

class SourceStager {
 public:
  SourceStager(std::string staging, CopyOwnership owner, std::string where)
      : staging_(std::move(staging)), owner_(owner), where_(std::move(where)) {}

  void from_tree(const std::string& root, const std::vector<std::string>& candidates,
                 const std::string& pattern, const std::set<std::string>* allowed, bool add) {
    std::vector<std::string> matches = match_sources(pattern, candidates);
    if (matches.empty()) throw Error::invalid(where_ + ": no source files were specified ('" + pattern + "' matches nothing)");
    for (const std::string& match : matches) {
      std::string name = match == "." ? "." : fs::path(match).filename().string();
      std::string copy = slot() + "/" + (name == "." ? "tree" : name);
      copy_match(root, match, copy, allowed, owner_);
      bool is_dir = fs::is_directory(fs::symlink_status(copy));
      staged.push_back({.path = copy, .name = name, .is_dir = is_dir,
                        .extract = add && !is_dir && fs::is_regular_file(copy) && is_tar_archive(copy)});
    }
  }

  void from_text(const std::string& name, const std::string& text) {
    std::string path = slot() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    copy_ownership(path, 0644);
    staged.push_back({.path = path, .name = name});
  }

  void from_url(const std::string& url, const std::string& checksum) {
    std::string path = slot() + "/" + url_file_name(url);
    fetch_url(url, path, checksum);
    copy_ownership(path, 0600);  // Docker: downloaded files get mode 600
    staged.push_back({.path = path, .name = url_file_name(url)});
  }

  std::vector<StagedSource> staged;

 private:
  std::string slot() {
    std::string dir = staging_ + "/" + std::to_string(slots_++);
    fs::create_directories(dir);
    return dir;
  }
  void copy_ownership(const std::string& path, mode_t mode) {
    if (lchown(path.c_str(), owner_.uid.value_or(0), owner_.gid.value_or(0)) < 0) throw Error(errno, "chown " + path);
    if (chmod(path.c_str(), owner_.mode.value_or(mode)) < 0) throw Error(errno, "chmod " + path);
  }

  std::string staging_;
  CopyOwnership owner_;
  std::string where_;
  int slots_ = 0;
};

std::string flag(const Instruction& ins, const char* name);

// Sources from the build context: context paths (globs, .dockerignore applied), heredoc
// bodies, and for ADD URLs and local tar archives.
std::vector<StagedSource> stage_local(BuildContext& ctx, const Instruction& ins, const std::vector<std::string>& sources,
                                      const std::string& staging, const CopyOwnership& owner, const std::string& where) {
  SourceStager stager(staging, owner, where);
  std::set<std::string> allowed(ctx.context_files.begin(), ctx.context_files.end());
  bool add = ins.keyword == "ADD";
  for (const std::string& source : sources) {
    auto heredoc = std::find_if(ins.heredocs.begin(), ins.heredocs.end(), [&](const Heredoc& h) { return h.word == source; });
    if (heredoc != ins.heredocs.end()) {
      stager.from_text(heredoc->name, heredoc->content);
    } else if (add && is_url(source)) {
      auto checksum = ins.flags.find("checksum");
      stager.from_url(source, checksum == ins.flags.end() ? "" : checksum->second);
    } else if (is_url(source)) {
      throw Error::invalid(where + ": COPY cannot take a URL; use ADD");
    } else {
      stager.from_tree(ctx.options.context_dir, ctx.context_files, source, &allowed, add);
    }
  }
  return stager.staged;
}

std::string flag(const Instruction& ins, const char* name) {
  auto it = ins.flags.find(name);
  return it == ins.flags.end() ? "" : it->second;
}


// Stages sources out of another stage's or image's filesystem. With several layers their merged
// view needs an overlay mount: made in a child process with a private mount namespace, so it
// can never outlive the step or show up on the host.
void stage_from_image(BuildContext& ctx, const ImageState& image, const std::vector<std::string>& patterns,
                      const std::string& staging, const CopyOwnership& owner, const std::string& where) {
  std::vector<std::string> lowers = unpacked_layers_top_first(ctx.store, image);
  auto stage_all = [&](const std::string& root) {
    SourceStager stager(staging, owner, where);
    std::vector<std::string> candidates = list_tree(root);
    for (const std::string& pattern : patterns) stager.from_tree(root, candidates, pattern, nullptr, false);
  };
  if (lowers.size() <= 1) {
    std::string root = lowers.empty() ? staging + "/empty-root" : lowers[0];
    fs::create_directories(staging + "/empty-root");
    return stage_all(root);
  }
  std::string options = "lowerdir=";
  for (size_t i = 0; i < lowers.size(); ++i) options += (i ? ":" : "") + lowers[i];
  std::string mount_point = staging + "/merged";
  fs::create_directories(mount_point);
  int error_pipe[2];
  check(pipe2(error_pipe, O_CLOEXEC), "pipe");
  pid_t child = fork();
  if (child == 0) {
    close(error_pipe[0]);
    std::string message;
    try {
      check(unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)");
      check(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make / private");
      check(mount("overlay", mount_point.c_str(), "overlay", MS_RDONLY, options.c_str()), "mount the source image");
      stage_all(mount_point);
      _exit(0);
    } catch (const std::exception& e) {
      message = e.what();
    }
    ssize_t ignored = write(error_pipe[1], message.data(), message.size());
    (void)ignored;
    _exit(1);
  }
  close(error_pipe[1]);
  char buffer[1024];
  ssize_t n = read(error_pipe[0], buffer, sizeof buffer);
  close(error_pipe[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error::invalid(n > 0 ? std::string(buffer, static_cast<size_t>(n)) : where + ": copying from the source image failed");
  fs::remove(mount_point);
  fs::remove_all(staging + "/empty-root");
}

// The staged sources, read back from the slots (stage_from_image staged them in a child).
std::vector<StagedSource> staged_in(const std::string& staging) {
  std::vector<StagedSource> staged;
  for (int slot = 0; fs::exists(staging + "/" + std::to_string(slot)); ++slot) {
    for (const auto& entry : fs::directory_iterator(staging + "/" + std::to_string(slot))) {
      std::string name = entry.path().filename() == "tree" ? "." : entry.path().filename().string();
      staged.push_back({.path = entry.path(), .name = name, .is_dir = entry.is_directory() && !entry.is_symlink()});
    }
  }
  return staged;
}

void make_dirs_like_image(const std::string& layer_dir, const std::string& dir, const std::vector<std::string>& lowers) {
  fs::path current = "/";
  for (const auto& part : fs::path(dir).relative_path()) {
    current /= part;
    std::string target = layer_dir + current.string();
    if (fs::exists(fs::symlink_status(target))) continue;
    auto st = image_lstat(lowers, current.string());
    bool like = st && S_ISDIR(st->st_mode);
    check(mkdir(target.c_str(), like ? (st->st_mode & 07777) : 0755), "mkdir " + target);
    // Keep the image's mode and owner: a layer entry replaces the directory's metadata.
    if (like) check(lchown(target.c_str(), st->st_uid, st->st_gid), "chown " + target);
    if (like) check(chmod(target.c_str(), st->st_mode & 07777), "chmod " + target);
  }
}

void merge_into(const std::string& from, const std::string& to) {
  for (const auto& entry : fs::directory_iterator(from)) {
    fs::path target = fs::path(to) / entry.path().filename();
    bool both_dirs = entry.is_directory() && !entry.is_symlink() && fs::is_directory(fs::symlink_status(target));
    if (both_dirs) {
      merge_into(entry.path(), target);
      continue;
    }
    fs::remove_all(target);
    fs::rename(entry.path(), target);
  }
}

void place(const std::vector<StagedSource>& staged, const std::string& dest, bool dest_is_dir,
           const std::string& layer_dir, const std::vector<std::string>& lowers) {
  if (!dest_is_dir) {
    make_dirs_like_image(layer_dir, fs::path(dest).parent_path().string(), lowers);
    fs::rename(staged.at(0).path, layer_dir + dest);
    return;
  }
  make_dirs_like_image(layer_dir, dest, lowers);
  for (const StagedSource& source : staged) {
    if (source.extract) {
      extract_layer(source.path, layer_dir + dest, {.whiteouts = WhiteoutHandling::Keep, .preserve_owner = {}, .opaque_xattr = {}});
    } else if (source.is_dir) {
      merge_into(source.path, layer_dir + dest);
    } else {
      fs::path target = fs::path(layer_dir + dest) / source.name;
      fs::remove_all(target);
      fs::rename(source.path, target);
    }
  }
}

CopyOwnership ownership_from_flags(const Instruction& ins, const std::vector<std::string>& lowers,
                                   const std::string& where) {
  CopyOwnership owner{.uid = 0, .gid = 0, .mode = std::nullopt};  // Docker: root unless --chown
  if (std::string chown = flag(ins, "chown"); !chown.empty()) {
    ResolvedUser user = resolve_user(chown, lowers);
    owner.uid = user.uid;
    owner.gid = chown.find(':') == std::string::npos ? user.uid : user.gid;
    if (chown.find(':') == std::string::npos && !chown.empty() && !std::isdigit(static_cast<unsigned char>(chown[0])))
      owner.gid = user.gid;
  }
  if (std::string chmod = flag(ins, "chmod"); !chmod.empty()) {
    auto mode = parse_number<unsigned>(chmod, 8);
    if (!mode || *mode > 07777) throw Error::invalid(where + ": --chmod must be octal, got '" + chmod + "'");
    owner.mode = static_cast<mode_t>(*mode);
  }
  return owner;
}

}  // namespace

CachedStep copy_step(BuildContext& ctx, const ImageState& state, const Instruction& ins,
                     const std::vector<std::string>& words, const ImageState* from, const std::string& where,
                     const std::function<std::optional<CachedStep>(const std::string&)>& cached) {
  if (words.size() < 2) throw Error::invalid(where + ": " + ins.keyword + " needs a source and a destination");
  std::vector<std::string> lowers = unpacked_layers_top_first(ctx.store, state);
  ScratchDir scratch(ctx.store.tmp_dir(), "copy");
  std::string staging = scratch.path() + "/src";
  fs::create_directories(staging);
  CopyOwnership owner = ownership_from_flags(ins, lowers, where);
  std::vector<std::string> sources(words.begin(), words.end() - 1);
  std::vector<StagedSource> staged;
  if (from != nullptr) {
    stage_from_image(ctx, *from, sources, staging, owner, where);
    staged = staged_in(staging);  // staged by a child process: read back from the slots
  } else {
    staged = stage_local(ctx, ins, sources, staging, owner, where);
  }
  std::string dest = words.back();
  bool trailing_slash = !dest.empty() && dest.back() == '/';
  std::string workdir = state.config.config.working_dir.empty() ? "/" : state.config.config.working_dir;
  dest = resolve_parents_in_image(lowers, (fs::path(workdir) / dest).lexically_normal().string());
  if (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  auto existing = image_lstat(lowers, dest);
  bool dest_is_dir = trailing_slash || staged.size() > 1 || (existing && S_ISDIR(existing->st_mode)) ||
                     std::any_of(staged.begin(), staged.end(), [](const auto& s) { return s.is_dir || s.extract; });
  if (auto hit = cached(content_hash(staging) + " " + dest + (dest_is_dir ? "/" : ""))) return *hit;
  std::string layer_dir = scratch.path() + "/layer";
  fs::create_directories(layer_dir);
  place(staged, dest, dest_is_dir, layer_dir, lowers);
  return layer_from_directory(ctx, layer_dir);
}

}  // namespace sandcell::rootfs_builder
