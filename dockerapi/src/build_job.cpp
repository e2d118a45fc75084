// The process behind `POST /build` (routes_build.cpp): `sandcell-serve docker-build-job DIR`
// reads DIR/request.json, builds DIR/context with sandcell's builder (rootfs_builder::build_image,
// as `sandcell build`; RUN steps in sandcell sandboxes, without network), writes Docker's JSON
// lines on stdout and removes DIR. A process of its own: the builder runs sandboxes, which the
// API server's threads should not share a process with.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

#include "container_store.hpp"
#include "job_lines.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/dockerapi/server.hpp"
#include "sandcell/rootfs_builder/build.hpp"
#include "sandcell/rootfs_builder/registry.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {
namespace {

namespace rb = rootfs_builder;
using nlohmann::json;

void emit(const json& line) {
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the server is gone; the build goes on to its end
    done += static_cast<size_t>(n);
  }
}

void stream(std::string text) {
  if (text.empty() || text.back() != '\n') text += "\n";
  emit({{"stream", text}});
}

// The builder's "[2/5] RUN make" as Docker's classic builder prints it: "Step 2/5 : RUN make".
std::string docker_step(const std::string& line) {
  static const std::regex kStep(R"(^\[(\d+/\d+)\] (.*)$)");
  std::smatch m;
  return std::regex_match(line, m, kStep) ? "Step " + m[1].str() + " : " + m[2].str() : line;
}

// The client's logins by registry (X-Registry-Config), from the server on our stdin.
std::map<std::string, rb::RegistryCredentials> read_logins() {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(STDIN_FILENO, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > (1u << 20)) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  std::map<std::string, rb::RegistryCredentials> out;
  json logins = parse_bounded_json_or_discarded(text);
  if (!logins.is_object()) return out;
  for (const auto& [registry, login] : logins.items())
    if (login.is_object())
      out[registry] = {login.value("username", ""), login.value("password", "")};
  return out;
}

rb::BuildOptions build_options(const json& request, const std::string& context, const std::string& store_root,
                               const std::map<std::string, rb::RegistryCredentials>& logins) {
  rb::BuildOptions options;
  options.context_dir = context;
  options.dockerfile = request.at("dockerfile").get<std::string>();
  options.dockerfile_in_context = true;
  const json& tags = request.at("tags");
  if (!tags.empty()) options.tag = tags[0].get<std::string>();
  options.build_args = request.at("buildargs").get<std::map<std::string, std::string>>();
  options.labels = request.at("labels").get<std::map<std::string, std::string>>();
  options.target = request.at("target").get<std::string>();
  options.no_cache = request.at("nocache").get<bool>();
  options.host_network = false;
  if (int64_t memory = request.at("memory").get<int64_t>(); memory > 0) options.memory_bytes = static_cast<uint64_t>(memory);
  bool quiet = request.at("quiet").get<bool>();
  options.progress = [quiet](const std::string& line) {
    if (!quiet) stream(docker_step(line));
  };
  // FROM an image the store lacks: pulled with the client's login for its registry
  // (X-Registry-Config), else anonymously; never with the host's credentials.
  options.fetch_image = [quiet, store_root, logins](const std::string& image) {
    if (!quiet) stream("Pulling " + image);
    rb::PullOptions pull;
    pull.stored_credentials = false;
    if (auto login = logins.find(rb::parse_registry_reference(image).registry); login != logins.end())
      pull.credentials = login->second;
    rb::ImageStore store(store_root);
    return rb::pull_image(store, image, pull).local_name;
  };
  return options;
}

void build(const std::string& job_dir, const std::string& store_root) {
  json request = read_json(job_dir + "/request.json");
  rb::BuildOptions options = build_options(request, job_dir + "/context", store_root, read_logins());
  rb::ImageStore store(store_root);
  // A prune waits for the build (its blobs, and job_dir should the server be gone).
  rb::ImageStore::Lease hold = store.lease();
  rb::BuildResult result = rb::build_image(store, options);
  const json& tags = request.at("tags");
  for (size_t i = 1; i < tags.size(); ++i) store.set_tag(tags[i].get<std::string>(), result.manifest_digest);
  emit({{"aux", {{"ID", result.image_id}}}});
  if (request.at("quiet").get<bool>()) {
    stream(result.image_id);
    return;
  }
  stream("Successfully built " + result.image_id.substr(7, 12));
  for (const auto& tag : tags) stream("Successfully tagged " + tag.get<std::string>());
}

}  // namespace

int run_build_job(const std::string& job_dir, const std::string& store_root) {
  int code = 0;
  try {
    build(job_dir, store_root);
  } catch (const Error& e) {
    // What fails a build is the client's Dockerfile and context, but for a full or broken disk.
    int errno_code = e.code().value();
    bool ours = !e.input_error() && (errno_code == ENOSPC || errno_code == EDQUOT || errno_code == EIO || errno_code == ENOMEM);
    json line = error_line(e.what());
    line["errorDetail"]["code"] = ours ? 500 : 400;
    emit(line);
    code = 1;
  } catch (const std::exception& e) {
    json line = error_line(e.what());
    line["errorDetail"]["code"] = 500;
    emit(line);
    code = 1;
  }
  std::error_code ignored;
  std::filesystem::remove_all(job_dir, ignored);
  return code;
}

}  // namespace sandcell::dockerapi
