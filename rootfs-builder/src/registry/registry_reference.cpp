// Docker's normalisation of image names: a first component with '.' or ':' or "localhost" is
// a registry host, anything else is a repository on Docker Hub, where single names live under
// "library/". The grammar itself is checked by parse_reference (image_reference.cpp).
#include "sandcell/rootfs_builder/registry_reference.hpp"

#include <algorithm>

#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

constexpr std::string_view kDockerHub = "docker.io";

bool is_registry_host(std::string_view first) {
  return first.find_first_of(".:") != std::string_view::npos || first == "localhost" ||
         std::any_of(first.begin(), first.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

}  // namespace

std::string normalize_registry(std::string_view registry) {
  std::string host(registry);
  if (auto scheme = host.find("://"); scheme != std::string::npos) host.erase(0, scheme + 3);
  if (auto slash = host.find('/'); slash != std::string::npos) host.resize(slash);
  if (host == "index.docker.io" || host == "registry-1.docker.io" || host == "registry.hub.docker.com")
    return std::string(kDockerHub);
  return host;
}

std::string RegistryReference::api_host() const {
  return registry == kDockerHub ? "registry-1.docker.io" : registry;
}

std::string RegistryReference::familiar() const {
  std::string name = repository;
  if (registry != kDockerHub) name = registry + "/" + repository;
  else if (name.starts_with("library/") && name.find('/', 8) == std::string::npos) name.erase(0, 8);
  return digest.empty() ? name + ":" + tag : name + "@" + digest;
}

RegistryReference parse_registry_reference(std::string_view text) {
  if (text.find("://") != std::string_view::npos)
    throw Error::invalid("invalid image reference " + std::string(text) + ": no scheme is allowed");
  ImageReference parsed = parse_reference(text);  // grammar, tag and digest
  RegistryReference ref{.registry = std::string(kDockerHub), .repository = parsed.name,
                        .tag = parsed.tag, .digest = parsed.digest};
  auto slash = parsed.name.find('/');
  if (slash != std::string::npos && is_registry_host(parsed.name.substr(0, slash))) {
    ref.registry = normalize_registry(parsed.name.substr(0, slash));
    ref.repository = parsed.name.substr(slash + 1);
  }
  if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos)
    ref.repository = "library/" + ref.repository;
  if (std::any_of(ref.repository.begin(), ref.repository.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
    throw Error::invalid("invalid image reference " + std::string(text) + ": repository name must be lowercase");
  return ref;
}

}  // namespace sandcell::rootfs_builder
