// docker pull and docker push: `POST /images/create?fromImage=` and `POST /images/{name}/push`,
// through the registry client `sandcell pull/push` use (rootfs_builder/registry.hpp), with the
// client's credentials from X-Registry-Auth only: never the ones stored on the host. Progress
// goes out as Docker's JSON lines while the transfer runs (job_lines.hpp).
#include <memory>

#include "api_error.hpp"
#include "job_lines.hpp"
#include "routes.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/registry.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {

HttpReply build_from_context(const ApiContext& api, const HttpRequest& request);  // routes_build.cpp

namespace {

namespace rb = rootfs_builder;
using nlohmann::json;

// The client's credentials (400 for a header that is not Docker's shape); none: anonymous.
template <typename Options>
Options registry_options(const HttpRequest& request) {
  Options options;
  options.stored_credentials = false;
  auto header = request.headers.find("x-registry-auth");
  if (header != request.headers.end()) options.credentials = rb::parse_registry_auth_header(header->second);
  return options;
}

// A registry's refusal as Docker answers it: 404 for a manifest it does not have.
ApiError registry_error(const Error& e) {
  std::string message = e.what();
  if (!e.input_error()) return {500, message};
  return e.not_found() ? not_found(message) : bad_request(message);
}

// {"status":"Downloading","progressDetail":{"current","total"},"id"}, as Docker's per-layer lines
// (sandcell's client counts the whole transfer, so one line stands for all the layers).
std::function<void(int64_t, int64_t)> progress_lines(JobLines& lines, const std::string& id, const std::string& verb,
                                                     std::function<void()> before_first) {
  auto first = std::make_shared<bool>(true);
  return [&lines, id, verb, first, before_first = std::move(before_first)](int64_t done, int64_t total) {
    if (*first && before_first) before_first();
    *first = false;
    lines.write({{"status", verb}, {"progressDetail", {{"current", done}, {"total", total}}}, {"id", id}});
  };
}

HttpReply pull(const ApiContext& api, const HttpRequest& request) {
  if (request.param("fromSrc"))
    throw ApiError{501, "fromSrc (docker import) is not implemented by sandcell's Docker API"};
  std::string image = request.param("fromImage").value_or("");
  if (image.empty()) throw bad_request("fromImage is required");
  std::string tag = request.param("tag").value_or("");
  if (!tag.empty()) image += (tag.starts_with("sha256:") ? "@" : ":") + tag;
  rb::RegistryReference ref = rb::parse_registry_reference(image);
  auto options = registry_options<rb::PullOptions>(request);
  options.platform = request.param("platform").value_or("");
  std::string store_root = api.store_root;
  return run_job([store_root, ref, options](JobLines& lines) mutable {
    std::string id = ref.tag_or_digest();
    json pulling = {{"status", "Pulling from " + ref.repository}, {"id", id}};
    auto said_pulling = std::make_shared<bool>(false);
    options.on_progress = progress_lines(lines, id, "Downloading", [&lines, pulling, said_pulling] {
      lines.write(pulling);
      *said_pulling = true;
    });
    rb::ImageStore store(store_root);
    rb::PullResult result;
    try {
      result = rb::pull_image(store, ref.familiar(), options);
    } catch (const Error& e) {
      throw registry_error(e);
    }
    if (!*said_pulling) lines.write(pulling);
    if (result.blobs_fetched > 0) lines.write({{"status", "Download complete"}, {"id", id}});
    lines.write({{"status", "Digest: " + result.manifest_digest}});
    lines.write({{"status", std::string(result.blobs_fetched > 0 ? "Status: Downloaded newer image for "
                                                                 : "Status: Image is up to date for ") +
                                ref.familiar()}});
  });
}

HttpReply push(const ApiContext& api, const HttpRequest& request, const std::string& name) {
  std::string tag = request.param("tag").value_or("");
  if (tag.empty()) throw bad_request("tag is required: pushing every tag of a repository (--all-tags) is not supported by sandcell");
  rb::RegistryReference target = rb::parse_registry_reference(name + ":" + tag);
  rb::ImageStore store(api.store_root);
  try {
    store.resolve(target.familiar());
  } catch (const Error&) {
    throw not_found("An image does not exist locally with the tag: " + target.familiar());
  }
  auto options = registry_options<rb::PushOptions>(request);
  std::string store_root = api.store_root;
  return run_job([store_root, target, options](JobLines& lines) mutable {
    lines.write({{"status", "The push refers to repository [" + target.registry + "/" + target.repository + "]"}});
    options.on_progress = progress_lines(lines, target.tag, "Pushing", {});
    rb::ImageStore store(store_root);
    rb::PushResult result;
    try {
      result = rb::push_image(store, target.familiar(), target.familiar(), options);
    } catch (const Error& e) {
      throw registry_error(e);
    }
    int64_t size = static_cast<int64_t>(store.resolve(target.familiar()).manifest_json.size());
    lines.write({{"status", "Pushed"}, {"id", target.tag}});
    lines.write({{"status", target.tag + ": digest: " + result.manifest_digest + " size: " + std::to_string(size)}});
    lines.write({{"progressDetail", json::object()},
                 {"aux", {{"Tag", target.tag}, {"Digest", result.manifest_digest}, {"Size", size}}}});
  });
}

}  // namespace

std::optional<HttpReply> image_transfer_route(const ApiContext& api, const HttpRequest& request,
                                              const Segments& path) {
  if (request.method != "POST" || path.empty()) return std::nullopt;
  if (path == Segments{"build"}) return build_from_context(api, request);
  if (path[0] != "images") return std::nullopt;
  if (path == Segments{"images", "create"}) return pull(api, request);
  if (path.size() >= 3 && path.back() == "push") return push(api, request, image_name(path, 1));
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
