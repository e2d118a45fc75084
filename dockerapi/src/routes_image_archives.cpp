// docker save and docker load: `GET /images/{name}/get`, `GET /images/get?names=...` and
// `POST /images/load`, through the store's own archive code (rootfs_builder/archive_io.hpp, as
// `sandcell save/load`): Docker 25+'s docker-archive out, any docker save or OCI archive in, every
// member extracted inside a temporary directory of the store (hostile names and links refused).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "api_error.hpp"
#include "routes.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/archive_io.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;

HttpReply save_images(const ApiContext& api, const std::vector<std::string>& names) {
  if (names.empty()) throw bad_request("give the images to save (names)");
  rootfs_builder::ImageStore store(api.store_root);
  for (const std::string& name : names) resolve_image(store, name);  // 404 before any work
  // Written whole before the first byte goes out (the archive lists every layer's digest
  // first), then unlinked: it goes with the stream, also when the client hangs up.
  std::string path = store.tmp_dir() + "/docker-save-" + random_id().substr(0, 16) + ".tar";
  rootfs_builder::save_images(store, names, path, rootfs_builder::ArchiveFormat::DockerArchive);
  auto file = std::make_shared<UniqueFd>(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  int opened = errno;
  unlink(path.c_str());
  if (!*file) throw Error(opened, "open " + path);
  return streamed_file(file, "application/x-tar");
}

// Docker's load answer: one {"stream": ...} line per image, as the CLI prints them.
std::string loaded_lines(rootfs_builder::ImageStore& store, const std::vector<std::string>& loaded) {
  std::string out;
  for (const std::string& name : loaded) {
    std::string line = "Loaded image: " + name + "\n";
    if (name.starts_with("sha256:"))  // untagged: load_images names its manifest
      line = "Loaded image ID: " + rootfs_builder::manifest_from_json(store.read_blob(name)).config.digest + "\n";
    out += nlohmann::json{{"stream", line}}.dump() + "\n";
  }
  return out;
}

HttpReply load_images(const ApiContext& api, const HttpRequest& request) {
  if (!request.body_file || request.body_bytes == 0)
    throw bad_request("the request body must be an image archive (docker save's tar)");
  rootfs_builder::ImageStore store(api.store_root);
  const std::string body_path = "/proc/self/fd/" + std::to_string(request.body_file->get());
  std::vector<std::string> loaded;
  try {
    // A compressed archive may unpack to more than it weighs, but not without bound.
    loaded = rootfs_builder::load_images(store, body_path, std::min(api.max_load_bytes, UINT64_MAX / 4) * 4);
  } catch (const Error& e) {
    store.prune_if_idle();  // the blobs of the images that came before the failure
    std::string message = e.what();
    for (size_t at; (at = message.find(body_path)) != std::string::npos;) message.replace(at, body_path.size(), "archive");
    int code = e.code().value();
    throw ApiError{code == ENOSPC || code == EDQUOT ? 500 : 400, "load: " + message};
  }
  HttpReply reply;
  reply.body = loaded_lines(store, loaded);
  return reply;
}

}  // namespace

HttpReply streamed_file(std::shared_ptr<runtime::UniqueFd> file, const char* content_type) {
  HttpReply reply;
  reply.content_type = content_type;
  reply.stream = [file](char* buffer, size_t size) -> size_t {
    for (;;) {
      ssize_t n = read(file->get(), buffer, size);
      if (n < 0 && errno == EINTR) continue;
      return n < 0 ? 0 : static_cast<size_t>(n);
    }
  };
  return reply;
}

std::optional<HttpReply> image_archive_route(const ApiContext& api, const HttpRequest& request,
                                             const Segments& path) {
  if (path.empty() || path[0] != "images") return std::nullopt;
  if (path.size() == 2 && path[1] == "load" && request.method == "POST") return load_images(api, request);
  if (request.method != "GET" || path.back() != "get") return std::nullopt;
  if (path.size() == 2) return save_images(api, request.params("names"));
  return save_images(api, {image_name(path, 1)});
}

}  // namespace sandcell::dockerapi
