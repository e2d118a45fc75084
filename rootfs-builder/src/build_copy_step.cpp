// COPY and ADD: sources are staged (matched, copied, owned and moded as the flags say), hashed
// for the cache key, then placed at the destination inside a fresh directory that becomes the
// step's layer. Nothing runs inside the image, so COPY works on any image, even FROM scratch.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "archive_handles.hpp"
#include "build_steps.hpp"
#include "file_copy.hpp"
#include "fs_tree.hpp"
#include "gzip_sink.hpp"
#include "image_paths.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/rootfs_builder/dockerignore.hpp"
#include "sandcell/rootfs_builder/image_user.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "unique_fd.hpp"
#include "url_fetch.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWholeTreeMark = "-whole-tree";  // "<slot>-whole-tree" beside slot dir

struct StagedSource {
  std::string path;  // the staged copy
  std::string name;  // the base name it keeps at a directory destination
  bool is_dir = false;
  bool extract = false;  // ADD of a local tar archive: unpacked at the destination
};

bool is_tar_archive(const std::string& path) {
  try {
    ArchiveReader a = open_tar_reader(path);  // the in-process decompressors only
    archive_entry* entry = nullptr;
    return libarchive().read_next_header(a.get(), &entry) == ARCHIVE_OK;
  } catch (const Error&) {
    return false;
  }
}

// Copies `match` (relative to the root fd; "." for all of it) keeping only the paths in
// `allowed` (the context minus .dockerignore); nullptr allows everything. The match's
// directories are resolved inside the root (a context or an image's filesystem): a symlink
// among them means what it would inside the image, never a host path. Below the match
// nothing is followed; symlinks are copied as the symlinks they are.
void copy_match(int root, const std::string& match, const std::string& to, const std::set<std::string>* allowed,
                const CopyOwnership& owner) {
  std::string parent = match == "." ? "" : fs::path(match).parent_path().string();
  std::string name = match == "." ? "." : fs::path(match).filename().string();
  UniqueFd dir(openat2_in_root(root, parent, O_RDONLY | O_DIRECTORY));
  if (!dir) throw Error(errno, "open " + (parent.empty() ? std::string(".") : parent));
  std::function<bool(const std::string&)> keep;
  if (allowed != nullptr) keep = [allowed](const std::string& relative) { return allowed->count(relative) > 0; };
  copy_tree_at(dir.get(), name, to, owner, parent, keep);
}

class SourceStager {
 public:
  SourceStager(std::string staging, CopyOwnership owner, std::string where)
      : staging_(std::move(staging)), owner_(owner), where_(std::move(where)) {}

  void from_tree(int root, const std::vector<std::string>& candidates,
                 const std::string& pattern, const std::set<std::string>* allowed, bool add) {
    std::vector<std::string> matches = match_sources(pattern, candidates);
    if (matches.empty()) throw Error::invalid(where_ + ": no source files were specified ('" + pattern + "' matches nothing)");
    for (const std::string& match : matches) {
      std::string name = match == "." ? "." : fs::path(match).filename().string();
      std::string dir = slot();
      // The whole root is staged as "tree", marked by a file beside the slot: a source that is
      // itself named "tree" must stay a file of that name.
      if (name == ".") std::ofstream(dir + kWholeTreeMark);
      std::string copy = dir + "/" + (name == "." ? "tree" : name);
      copy_match(root, match, copy, allowed, owner_);
      // symlink_status: a staged symlink is data for the image; its target is a host path.
      fs::file_status status = fs::symlink_status(copy);
      bool is_dir = fs::is_directory(status);
      staged.push_back({.path = copy, .name = name, .is_dir = is_dir,
                        .extract = add && fs::is_regular_file(status) && is_tar_archive(copy)});
    }
  }

  // A heredoc's name is the file's name at the destination: one component, created under the
  // slot's fd (the lexer refuses other names; this is the second line of defence).
  void from_text(const std::string& name, const std::string& text) {
    if (!is_single_name(name)) throw Error::invalid(where_ + ": heredoc name '" + name + "' is not a file name");
    std::string dir = slot();
    UniqueFd slot_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!slot_fd) throw Error(errno, "open " + dir);
    UniqueFd file(::openat(slot_fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file) throw Error(errno, "create " + dir + "/" + name);
    write_all(file.get(), text.data(), text.size(), "write " + dir + "/" + name);
    std::string path = dir + "/" + name;
    copy_ownership(path, 0644);
    staged.push_back({.path = path, .name = name});
  }

  void from_url(const std::string& url, const std::string& checksum) {
    std::string name = url_file_name(url);  // one component, or "download"
    std::string path = slot() + "/" + name;
    fetch_url(url, path, checksum);
    copy_ownership(path, 0600);  // Docker: downloaded files get mode 600
    staged.push_back({.path = path, .name = name});
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
  UniqueFd context_root(::open(ctx.options.context_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!context_root) throw Error(errno, "open the build context " + ctx.options.context_dir);
  bool add = ins.keyword == "ADD";
  for (const std::string& source : sources) {
    auto heredoc = std::find_if(ins.heredocs.begin(), ins.heredocs.end(), [&](const Heredoc& h) { return h.word == source; });
    if (heredoc != ins.heredocs.end()) {
      stager.from_text(heredoc->name, heredoc->content);
    } else if (add && is_url(source) && !ctx.options.host_network) {
      // The fetch is made by sandcell on the host: with the build's network off it would be the
      // one way out that RUN steps do not have.
      throw Error::invalid(where + ": ADD " + source + ": the build has no network (--network none)");
    } else if (add && is_url(source)) {
      auto checksum = ins.flags.find("checksum");
      stager.from_url(source, checksum == ins.flags.end() ? "" : checksum->second);
    } else if (is_url(source)) {
      throw Error::invalid(where + ": COPY cannot take a URL; use ADD");
    } else {
      stager.from_tree(context_root.get(), ctx.context_files, source, &allowed, add);
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
    UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd) throw Error(errno, "open the source image at " + root);
    std::vector<std::string> candidates = list_tree_at(root_fd.get(), root);
    for (const std::string& pattern : patterns) stager.from_tree(root_fd.get(), candidates, pattern, nullptr, false);
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
    std::string dir = staging + "/" + std::to_string(slot);
    bool whole_tree = fs::exists(fs::symlink_status(dir + kWholeTreeMark));
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::string name = whole_tree ? "." : entry.path().filename().string();
      staged.push_back({.path = entry.path(), .name = name, .is_dir = entry.is_directory() && !entry.is_symlink()});
    }
  }
  return staged;
}

// The directory `dir` (absolute, inside the image) in the layer being made, created with the
// modes and owners the image gives its parts, one component at a time under the parent's fd.
UniqueFd make_dirs_like_image(int layer, const std::string& dir, const std::vector<std::string>& lowers) {
  UniqueFd current(::dup(layer));
  fs::path image_path = "/";
  for (const auto& part : fs::path(dir).relative_path()) {
    std::string name = part.string();
    if (!is_single_name(name)) throw Error::invalid("destination " + dir + ": '" + name + "' is not a file name");
    image_path /= name;
    struct stat existing {};
    if (::fstatat(current.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) != 0) {
      auto st = image_lstat(lowers, image_path.string());
      bool like = st && S_ISDIR(st->st_mode);
      check(::mkdirat(current.get(), name.c_str(), like ? (st->st_mode & 07777) : 0755), "mkdir " + image_path.string());
      // Keep the image's mode and owner: a layer entry replaces the directory's metadata.
      if (like) check(::fchownat(current.get(), name.c_str(), st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW), "chown " + image_path.string());
      if (like) check(::fchmodat(current.get(), name.c_str(), st->st_mode & 07777, 0), "chmod " + image_path.string());
    }
    UniqueFd next(::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) throw Error(errno, "open " + image_path.string() + " in the new layer");
    current = std::move(next);
  }
  return current;
}

// Moves a staged entry to `name` under the directory fd `dir`, replacing what is there.
void move_into(const std::string& staged_path, int dir, const std::string& name) {
  if (!is_single_name(name)) throw Error::invalid("'" + name + "' is not a file name");
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) remove_tree_at(dir, name);
  check(::renameat(AT_FDCWD, staged_path.c_str(), dir, name.c_str()), "move " + staged_path + " into the layer");
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
  UniqueFd layer(::open(layer_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!layer) throw Error(errno, "open " + layer_dir);
  if (!dest_is_dir) {
    UniqueFd parent = make_dirs_like_image(layer.get(), fs::path(dest).parent_path().string(), lowers);
    move_into(staged.at(0).path, parent.get(), fs::path(dest).filename().string());
    return;
  }
  UniqueFd dir = make_dirs_like_image(layer.get(), dest, lowers);
  // Every part of layer_dir + dest was just made by mkdirat above, in our private scratch dir.
  std::string dir_path = layer_dir + (dest == "/" ? "" : dest);
  for (const StagedSource& source : staged) {
    if (source.extract) {
      extract_layer(source.path, dir_path, {.whiteouts = WhiteoutHandling::Keep, .preserve_owner = {}, .opaque_xattr = {}, .max_bytes = {}});
    } else if (source.is_dir) {
      merge_into(source.path, dir_path);
    } else {
      move_into(source.path, dir.get(), source.name);
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
