// build_image(): stages in order, each instruction a step; RUN and COPY/ADD make layers (or
// reuse cached ones), the rest change the config.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "build_steps.hpp"
#include "fs_tree.hpp"
#include "sandcell/rootfs_builder/build.hpp"
#include "sandcell/rootfs_builder/dockerignore.hpp"
#include "sandcell/base/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string nlohmann_array(const std::vector<std::string>& items) { return nlohmann::json(items).dump(); }

// A Dockerfile or .dockerignore: a regular file (not a FIFO that never ends, not /dev/zero), at
// most 16 MiB. Its bytes are never echoed in an error: the name may be a symlink to a secret.
std::string read_text(UniqueFd fd, const std::string& path, const std::string& what) {
  constexpr off_t kMaxBytes = 16 << 20;
  if (!fd) throw Error::invalid(what + " " + path + " cannot be read: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error::invalid(what + " " + path + " is not a regular file");
  if (st.st_size > kMaxBytes) throw Error::invalid(what + " " + path + " is larger than 16 MiB");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, "read " + path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

// The context's own Dockerfile is resolved inside the context (a context's "Dockerfile ->
// /etc/shadow" must not put the host file's first line into an error message), and so is one
// the Docker API's client named (dockerfile_in_context); one named by --file is the caller's
// choice and opened as it is.
UniqueFd open_dockerfile(const BuildOptions& options) {
  if (!options.dockerfile.empty() && !options.dockerfile_in_context)
    return UniqueFd(::open(options.dockerfile.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  UniqueFd root(::open(options.context_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return root;
  std::string name = options.dockerfile.empty() ? "Dockerfile" : options.dockerfile;
  return UniqueFd(openat2_in_root(root.get(), name, O_RDONLY | O_NONBLOCK));
}

// Context paths (relative, "/"-separated) that .dockerignore keeps. Walked by fd: a symlink in
// the context is listed as itself, never followed out of the context.
std::vector<std::string> context_files(const std::string& context) {
  UniqueFd root(::open(context.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw Error(errno, "open the build context " + context);
  // Resolved inside the context: a .dockerignore symlinked to a host file reads the context's.
  UniqueFd ignore_fd(openat2_in_root(root.get(), ".dockerignore", O_RDONLY | O_NONBLOCK));
  if (!ignore_fd && errno != ENOENT) throw Error(errno, "open " + context + "/.dockerignore");
  DockerIgnore ignore = DockerIgnore::parse(
      ignore_fd ? read_text(std::move(ignore_fd), context + "/.dockerignore", ".dockerignore") : "");
  std::vector<std::string> files;
  // An exception (!pattern) may re-include something below an excluded directory: every path
  // is asked, none skipped with its parent.
  for (std::string& relative : list_tree_at(root.get(), context))
    if (!ignore.excluded(relative)) files.push_back(std::move(relative));
  return files;
}

ImageState state_of_image(const ImageRecord& base) {
  ImageState state;
  state.config = base.config;
  state.layers = base.manifest.layers;
  state.cache_key = "image " + base.manifest_digest;
  if (env_map(state.config.config.env).count("PATH") == 0) set_env(state.config, "PATH", kDefaultPath);
  return state;
}

ImageState base_state(BuildContext& ctx, const Stage& stage) {
  if (stage.base_stage) return ctx.built_stages.at(static_cast<size_t>(*stage.base_stage));
  if (stage.base == "scratch") {
    ImageState state;
    state.config.architecture = host_architecture();
    state.cache_key = "scratch";
    set_env(state.config, "PATH", kDefaultPath);
    return state;
  }
  std::string where = ctx.dockerfile.filename + ":" + std::to_string(stage.from.line) + ": FROM " + stage.base + ": ";
  std::string missing;
  try {
    return state_of_image(ctx.store.resolve(stage.base));
  } catch (const Error& e) {
    if (!e.not_found()) throw Error::invalid(where + e.what());  // here but broken: not pulled
    if (!ctx.options.fetch_image)
      throw Error::invalid(where + e.what() + " (make it with `sandcell bootstrap`, `sandcell load` or `sandcell build` first)");
    missing = e.what();
  }
  try {
    return state_of_image(ctx.store.resolve(ctx.options.fetch_image(stage.base)));
  } catch (const Error& e) {
    throw Error::invalid(where + missing + ", and pulling it failed: " + e.what() +
                         " (or make it with `sandcell bootstrap`, `sandcell load` or `sandcell build` first)");
  }
}

void add_history(ImageState& state, const Instruction& ins, bool empty_layer) {
  state.config.history.push_back({.created = image_timestamp(), .created_by = ins.original,
                                  .author = {}, .comment = "sandcell build", .empty_layer = empty_layer});
}

void apply_layer(ImageState& state, const CachedStep& step, const Instruction& ins) {
  if (step.layer) {
    state.layers.push_back(*step.layer);
    state.config.diff_ids.push_back(step.diff_id);
  }
  add_history(state, ins, !step.layer);
}

std::string scope_text(const ImageState& state, const StageScope& scope) {
  std::string text;
  for (const auto& env : state.config.config.env) text += "env " + env + "\n";
  for (const auto& [key, value] : scope.args) text += "arg " + key + "=" + value + "\n";
  return text;
}

// Looks the key up (unless --no-cache); on a miss runs `make` and records its result.
CachedStep cached_or(BuildContext& ctx, const std::string& key, const std::function<CachedStep()>& make) {
  if (!ctx.options.no_cache) {
    if (auto hit = cache_lookup(ctx.store, key)) {
      ++ctx.cached;
      ctx.say("  CACHED");
      return *hit;
    }
  }
  CachedStep step = make();
  cache_record(ctx.store, key, step);
  return step;
}

const ImageState* copy_source(BuildContext& ctx, const Instruction& ins, const StageScope& scope,
                              const ImageState& state, int stage_index, const std::string& where,
                              ImageState& image_holder) {
  auto from = ins.flags.find("from");
  if (from == ins.flags.end()) return nullptr;
  std::string name = expand(ctx, state, scope, from->second, where);
  if (auto index = ctx.dockerfile.find_stage(name)) {
    if (*index >= stage_index) throw Error::invalid(where + ": --from=" + name + " is not an earlier stage");
    return &ctx.built_stages.at(static_cast<size_t>(*index));
  }
  Stage as_base;
  as_base.base = name;
  as_base.from.line = ins.line;
  image_holder = base_state(ctx, as_base);
  return &image_holder;
}

void copy_instruction(BuildContext& ctx, ImageState& state, const StageScope& scope,
                      const Instruction& ins, int stage_index, const std::string& where) {
  std::vector<std::string> words;
  for (const std::string& arg : ins.args) {
    bool heredoc = std::any_of(ins.heredocs.begin(), ins.heredocs.end(), [&](const Heredoc& h) { return h.word == arg; });
    words.push_back(heredoc ? arg : expand(ctx, state, scope, arg, where));
  }
  ImageState image_holder;
  const ImageState* from = copy_source(ctx, ins, scope, state, stage_index, where, image_holder);
  Instruction expanded = ins;  // heredoc bodies expand like the rest, unless the marker was quoted
  for (Heredoc& doc : expanded.heredocs)
    if (doc.expand) doc.content = expand_heredoc(doc.content, stage_lookup(state, scope), ctx.dockerfile.escape, where);
  std::string flags;
  for (const auto& [name, value] : ins.flags) flags += name + "=" + value + ";";
  std::string key;
  auto cached = [&](const std::string& sources) -> std::optional<CachedStep> {
    key = step_key(state.cache_key, {ins.keyword, flags, sources, from ? from->cache_key : ""});
    if (ctx.options.no_cache) return std::nullopt;
    auto hit = cache_lookup(ctx.store, key);
    if (hit) {
      ++ctx.cached;
      ctx.say("  CACHED");
    }
    return hit;
  };
  CachedStep step = copy_step(ctx, state, expanded, words, from, where, cached);
  cache_record(ctx.store, key, step);
  apply_layer(state, step, ins);
  state.cache_key = key;
}

void run_instruction(BuildContext& ctx, ImageState& state, const StageScope& scope, const Instruction& ins,
                     const std::string& where) {
  std::string command = ins.json_form ? nlohmann_array(ins.args) : ins.original;
  std::string key = step_key(state.cache_key, {"RUN", command, scope_text(state, scope),
                                               ctx.options.host_network ? "net=host" : "net=none"});
  CachedStep step = cached_or(ctx, key, [&] { return run_step(ctx, state, scope, ins, where); });
  apply_layer(state, step, ins);
  state.cache_key = key;
}

ImageState build_stage(BuildContext& ctx, const Stage& stage) {
  ImageState state = base_state(ctx, stage);
  StageScope scope;
  ctx.say("[" + std::to_string(++ctx.step) + "/" + std::to_string(ctx.total_steps) + "] " + stage.from.original);
  for (const Instruction& ins : stage.instructions) {
    std::string where = ctx.dockerfile.filename + ":" + std::to_string(ins.line);
    ctx.say("[" + std::to_string(++ctx.step) + "/" + std::to_string(ctx.total_steps) + "] " + ins.original);
    if (ins.keyword == "RUN") {
      run_instruction(ctx, state, scope, ins, where);
    } else if (ins.keyword == "COPY" || ins.keyword == "ADD") {
      copy_instruction(ctx, state, scope, ins, stage.index, where);
    } else if (apply_config_step(state, scope, ctx, ins, where)) {
      add_history(state, ins, true);
      state.cache_key = step_key(state.cache_key, {ins.original, scope_text(state, scope)});
    } else {
      throw Error::invalid(where + ": " + ins.keyword + " is not supported by sandcell build");
    }
  }
  return state;
}

}  // namespace

BuildResult build_image(ImageStore& store, const BuildOptions& options) {
  std::string path = options.dockerfile.empty() ? options.context_dir + "/Dockerfile"
                     : options.dockerfile_in_context ? options.context_dir + "/" + options.dockerfile
                                                     : options.dockerfile;
  Dockerfile dockerfile = parse_dockerfile(read_text(open_dockerfile(options), path, "Dockerfile"),
                                           fs::path(path).filename(), options.build_args);
  BuildContext ctx{.store = store, .options = options, .dockerfile = dockerfile,
                   .context_files = context_files(options.context_dir), .built_stages = {}};
  int target = dockerfile.target_stage(options.target);
  for (int i = 0; i <= target; ++i)
    ctx.total_steps += 1 + static_cast<int>(dockerfile.stages[static_cast<size_t>(i)].instructions.size());
  for (int i = 0; i <= target; ++i) ctx.built_stages.push_back(build_stage(ctx, dockerfile.stages[static_cast<size_t>(i)]));
  ImageState& final_state = ctx.built_stages.back();
  final_state.config.created = image_timestamp();
  for (const auto& [key, value] : options.labels) final_state.config.config.labels[key] = value;
  std::string digest = store.put_image(options.tag, final_state.config, final_state.layers);
  ImageRecord record = store.resolve(digest);
  return {.manifest_digest = digest, .image_id = record.manifest.config.digest, .steps = ctx.step,
          .cached_steps = ctx.cached};
}

}  // namespace sandcell::rootfs_builder
