// docker pull and docker push: `POST /images/create?fromImage=` and `POST /images/{name}/push`,
// through the registry client `sandcell pull/push` use (rootfs_builder/registry.hpp), with the
// client's credentials from X-Registry-Auth only: never the ones stored on the host. Progress
// goes out as Docker's JSON lines while the transfer runs (job_lines.hpp).
#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "api_error.hpp"
#include "events.hpp"
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

// Docker's image events carry the reference as ID and its name without tag or digest as `name`.
std::string familiar_name(const rb::RegistryReference& ref) {
  std::string familiar = ref.familiar();
  return familiar.substr(0, familiar.rfind(ref.digest.empty() ? ':' : '@'));
}

// A layer as Docker names it in progress lines: the first 12 hex digits of its digest.
std::string short_layer_id(const std::string& digest) {
  size_t colon = digest.find(':');
  return digest.substr(colon == std::string::npos ? 0 : colon + 1, 12);
}

// Docker's per-layer pull lines (distribution/pull_v2.go, what the docker CLI draws one line per
// layer from): "Pulling from REPO" (id: the tag) before the first, then for each layer, by its
// short digest, "Pulling fs layer" or "Already exists", "Downloading" with its bytes, "Download
// complete" and "Pull complete" (the store unpacks a layer when a run first needs it: nothing
// is extracted here). An image whose every layer is there gets no layer lines, as Docker's.
class PullLines {
 public:
  PullLines(JobLines& lines, const rb::RegistryReference& ref) : lines_(lines), ref_(ref) {}

  void on_layer(const rb::LayerProgress& layer) {
    std::lock_guard lock(mutex_);
    const json id = short_layer_id(layer.digest);
    switch (layer.phase) {
      case rb::LayerProgress::Phase::Present:
        if (fetching_) lines_.write(layer_line("Already exists", id));
        else present_.push_back(id);  // said only if some layer is fetched
        return;
      case rb::LayerProgress::Phase::Waiting:
        say_pulling_from();
        if (!fetching_)
          for (const json& earlier : present_) lines_.write(layer_line("Already exists", earlier));
        fetching_ = true;
        lines_.write(layer_line("Pulling fs layer", id));
        return;
      case rb::LayerProgress::Phase::Downloading:
        lines_.write({{"status", "Downloading"}, {"progressDetail", {{"current", layer.done}, {"total", layer.total}}},
                      {"id", id}});
        return;
      case rb::LayerProgress::Phase::Downloaded:
        lines_.write(layer_line("Download complete", id));
        lines_.write(layer_line("Pull complete", id));
        return;
    }
  }

  void say_pulling_from() {
    if (std::exchange(said_pulling_, true)) return;
    lines_.write({{"status", "Pulling from " + ref_.repository}, {"id", ref_.tag_or_digest()}});
  }

 private:
  static json layer_line(const char* status, const json& id) {
    return {{"status", status}, {"progressDetail", json::object()}, {"id", id}};
  }

  JobLines& lines_;
  rb::RegistryReference ref_;
  std::mutex mutex_;  // on_layer is called from the transfer threads
  std::vector<json> present_;
  bool fetching_ = false, said_pulling_ = false;
};

// Docker's per-layer push lines (distribution/push_v2.go), by the short DiffID as Docker names a
// layer it pushes: "Preparing" for every layer, top first; then "Pushing" with its bytes and
// "Pushed", or "Layer already exists", or "Mounted from REPO". The docker CLI, off a terminal,
// prints the lines without a byte count ("ID: Preparing", "ID: Pushed").
std::function<void(const rb::PushLayerProgress&)> push_layer_lines(JobLines& lines) {
  return [&lines](const rb::PushLayerProgress& layer) {
    using Phase = rb::PushLayerProgress::Phase;
    const json id = short_layer_id(layer.diff_id.empty() ? layer.digest : layer.diff_id);
    json detail = json::object();
    std::string status;
    switch (layer.phase) {
      case Phase::Preparing: status = "Preparing"; break;
      case Phase::Present: status = "Layer already exists"; break;
      case Phase::Mounted: status = "Mounted from " + layer.mounted_from; break;
      case Phase::Pushed: status = "Pushed"; break;
      case Phase::Pushing:
        status = "Pushing";
        detail = {{"current", layer.done}, {"total", layer.total}};
        break;
    }
    lines.write({{"status", status}, {"progressDetail", detail}, {"id", id}});
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
    PullLines pull_lines(lines, ref);
    options.on_layer = [&pull_lines](const rb::LayerProgress& layer) { pull_lines.on_layer(layer); };
    rb::ImageStore store(store_root);
    rb::PullResult result;
    try {
      result = rb::pull_image(store, ref.familiar(), options);
    } catch (const Error& e) {
      throw registry_error(e);
    }
    pull_lines.say_pulling_from();
    lines.write({{"status", "Digest: " + result.manifest_digest}});
    lines.write({{"status", std::string(result.blobs_fetched > 0 ? "Status: Downloaded newer image for "
                                                                 : "Status: Image is up to date for ") +
                                ref.familiar()}});
    record_event(store_root, image_event("pull", ref.familiar(), familiar_name(ref)));
  });
}

// The tags `push` sends: the one asked for, or without one (`docker push --all-tags`, docker-py's
// push without tag) every tag the store has of the repository, in order.
std::vector<rb::RegistryReference> tags_to_push(const rb::ImageStore& store, const std::string& name,
                                                const std::string& tag) {
  if (!tag.empty()) {
    rb::RegistryReference target = rb::parse_registry_reference(name + ":" + tag);
    try {
      store.resolve(target.familiar());
    } catch (const Error&) {
      throw not_found("An image does not exist locally with the tag: " + target.familiar());
    }
    return {target};
  }
  rb::RegistryReference wanted = rb::parse_registry_reference(name);
  if (!wanted.digest.empty()) throw bad_request("push " + name + ": a digest cannot be pushed, give a tag");
  std::vector<rb::RegistryReference> out;
  for (const rb::ImageSummary& image : store.list()) {
    rb::RegistryReference have;
    try {
      have = rb::parse_registry_reference(image.name);
    } catch (const Error&) {
      continue;
    }
    if (have.registry == wanted.registry && have.repository == wanted.repository && have.digest.empty())
      out.push_back(have);
  }
  if (out.empty()) throw not_found("An image does not exist locally with the tag: " + name);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tag < b.tag; });
  return out;
}

HttpReply push(const ApiContext& api, const HttpRequest& request, const std::string& name) {
  rb::ImageStore store(api.store_root);
  std::vector<rb::RegistryReference> targets = tags_to_push(store, name, request.param("tag").value_or(""));
  auto options = registry_options<rb::PushOptions>(request);
  std::string store_root = api.store_root;
  return run_job([store_root, targets, options](JobLines& lines) mutable {
    const rb::RegistryReference& first = targets.front();
    lines.write({{"status", "The push refers to repository [" + first.registry + "/" + first.repository + "]"}});
    rb::ImageStore store(store_root);
    options.on_layer = push_layer_lines(lines);
    for (const rb::RegistryReference& target : targets) {
      rb::PushResult result;
      try {
        result = rb::push_image(store, target.familiar(), target.familiar(), options);
      } catch (const Error& e) {
        throw registry_error(e);
      }
      int64_t size = static_cast<int64_t>(store.resolve(target.familiar()).manifest_json.size());
      lines.write({{"status", target.tag + ": digest: " + result.manifest_digest + " size: " + std::to_string(size)}});
      lines.write({{"progressDetail", json::object()},
                   {"aux", {{"Tag", target.tag}, {"Digest", result.manifest_digest}, {"Size", size}}}});
      record_event(store_root, image_event("push", target.familiar(), familiar_name(target)));
    }
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
