// Local image names, following the grammar of distribution/reference (what docker and podman
// accept): [host[:port]/]component(/component)*[:tag][@sha256:hex].
#include <string_view>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

// The grammar's three regular expressions, checked by hand: libstdc++ compiled the three
// std::regex objects at the first image name of every process, ~0.2 ms of each `run IMAGE` and
// `sandcell code` (bench/README.md, "Session 15"). tests/unit checks these against the
// expressions themselves on random names.

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool alnum(char c) {
  return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// [a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*
bool valid_component(std::string_view text) {
  std::size_t i = 0;
  while (true) {
    const std::size_t run = i;
    while (i < text.size() && lower_alnum(text[i])) ++i;
    if (i == run) return false;  // empty, or a separator first, last or after a separator
    if (i == text.size()) return true;
    if (text.substr(i, 2) == "__")
      i += 2;
    else if (text[i] == '.' || text[i] == '_')
      ++i;
    else if (text[i] == '-')
      while (i < text.size() && text[i] == '-') ++i;
    else
      return false;
  }
}

// [a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?
bool valid_label(std::string_view text) {
  if (text.empty() || !alnum(text.front()) || !alnum(text.back())) return false;
  for (char c : text)
    if (!alnum(c) && c != '-') return false;
  return true;
}

// label(?:\.label)*(?::[0-9]+)?
bool valid_domain(std::string_view text) {
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    std::string_view port = text.substr(colon + 1);
    if (port.empty()) return false;
    for (char c : port)
      if (!digit(c)) return false;
    text = text.substr(0, colon);
  }
  while (true) {
    const std::size_t dot = text.find('.');
    if (!valid_label(text.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    text = text.substr(dot + 1);
  }
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 255) return false;
  std::size_t start = 0;
  auto first_slash = name.find('/');
  if (first_slash != std::string::npos) {
    std::string_view first = std::string_view(name).substr(0, first_slash);
    // As in docker: the first component is a host when it has a '.' or ':' or is localhost.
    bool is_host = first.find_first_of(".:") != std::string::npos || first == "localhost";
    if (is_host) {
      if (!valid_domain(first)) return false;
      start = first_slash + 1;
    }
  }
  while (start <= name.size()) {
    auto end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (!valid_component(std::string_view(name).substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}

// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool valid_tag(const std::string& tag) {
  if (tag.empty() || tag.size() > 128 || tag.front() == '.' || tag.front() == '-') return false;
  for (char c : tag)
    if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
  return true;
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
