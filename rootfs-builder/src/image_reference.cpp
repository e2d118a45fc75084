// Local image names, following the grammar of distribution/reference (what docker and podman
// accept): [host[:port]/]component(/component)*[:tag][@sha256:hex].
#include <regex>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

bool valid_name(const std::string& name) {
  static const std::regex kComponent(R"([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)");
  static const std::regex kDomain(
      R"((?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)");
  if (name.empty() || name.size() > 255) return false;
  std::size_t start = 0;
  auto first_slash = name.find('/');
  if (first_slash != std::string::npos) {
    std::string first = name.substr(0, first_slash);
    // As in docker: the first component is a host when it has a '.' or ':' or is localhost.
    bool is_host = first.find_first_of(".:") != std::string::npos || first == "localhost";
    if (is_host) {
      if (!std::regex_match(first, kDomain)) return false;
      start = first_slash + 1;
    }
  }
  while (start <= name.size()) {
    auto end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (!std::regex_match(name.substr(start, end - start), kComponent)) return false;
    start = end + 1;
  }
  return true;
}

bool valid_tag(const std::string& tag) {
  static const std::regex kTag(R"([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");
  return std::regex_match(tag, kTag);
}

}  // namespace

ImageReference parse_reference(std::string_view text) {
  ImageReference ref;
  std::string rest(text);
  if (auto at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
    if (!is_valid_digest(ref.digest))
      throw Error::invalid("invalid digest in image name: " + std::string(text));
  }
  auto colon = rest.rfind(':');
  auto slash = rest.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
    if (!valid_tag(ref.tag))
      throw Error::invalid("invalid tag in image name: " + std::string(text));
  }
  ref.name = rest;
  if (!valid_name(ref.name)) throw Error::invalid("invalid image name: " + std::string(text));
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  if (!ref.digest.empty()) ref.tag.clear();
  return ref;
}

}  // namespace sandcell::rootfs_builder
