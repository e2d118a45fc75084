#include "targets.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "proxy_request.hpp"
#include "sandcell/agent/code_request.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/oci/config.hpp"
#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/rootfs_builder/dockerignore.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::fuzz {
namespace fs = std::filesystem;

namespace {

// What COPY and ADD do with their words before touching any file: heredoc names become file
// names (one component each), source patterns are compiled and matched (bounded: a huge
// pattern once overflowed the stack in std::regex).
void check_copy_sources(const rootfs_builder::Instruction& ins) {
  if (ins.keyword != "COPY" && ins.keyword != "ADD") return;
  for (const auto& heredoc : ins.heredocs)
    if (heredoc.name.empty() || heredoc.name == "." || heredoc.name == ".." ||
        heredoc.name.find('/') != std::string::npos)
      throw std::logic_error("a heredoc name that is no file name was accepted: " + heredoc.name);
  static const std::vector<std::string> context = {"Dockerfile", "a", "b/c", "b/d/e"};
  for (size_t i = 0; i + 1 < ins.args.size(); ++i) {
    for (const std::string& match : rootfs_builder::match_sources(ins.args[i], context))
      if (match.starts_with("..") || match.starts_with('/'))
        throw std::logic_error("a source matched outside the context: " + match);
  }
}

}  // namespace

void dockerfile(std::string_view input) {
  try {
    auto parsed = rootfs_builder::parse_dockerfile(input, "Dockerfile", {{"A", "1"}});
    (void)parsed.target_stage("base");
    for (const auto& stage : parsed.stages)
      for (const auto& ins : stage.instructions) check_copy_sources(ins);
  } catch (const Error& e) {
    if (!e.input_error()) throw std::logic_error(std::string("bad Dockerfile gave a system error: ") + e.what());
  }
}

// The path of `sandcell run --seccomp FILE` and of OCI configs: parse, then compile with libseccomp.
void seccomp_profile(std::string_view input) {
  auto json = parse_bounded_json_or_discarded(input);  // as load_profile reads a profile file
  if (json.is_discarded()) return;
  static const seccomp::ProfileContext context{.capabilities = {"CAP_NET_RAW"}, .arch = "amd64", .kernel = {6, 1}};
  try {
    auto profile = seccomp::parse_docker_profile(json, "fuzz.json", context);
    (void)seccomp::compile(profile);
  } catch (const Error&) {
  }
}

// Bytes from a sandbox to the proxy, in two reads; then the host check and upstream head.
void proxy_request(std::string_view input) {
  if (input.empty()) return;
  const size_t split = static_cast<unsigned char>(input[0]) % input.size();
  const std::string_view text = input.substr(1);
  network::RequestParser parser(4096);
  // Never zero bytes, as the proxy (proxy_session.cpp): a zero-length read is the client's EOF,
  // which the proxy handles itself; http_parser takes len 0 as EOF and returns 1.
  size_t used = split == 0 ? 0 : parser.feed_head(text.data(), std::min(split, text.size()));
  if (!parser.head() && !parser.error() && used < text.size())
    used += parser.feed_head(text.data() + used, text.size() - used);
  if (used > text.size()) throw std::logic_error("the request parser consumed more than it was given");
  if (!parser.head() || parser.error()) return;
  parser.feed_body(text.data() + used, text.size() - used, [](std::string_view) { return true; });
  try {
    auto host = network::normalise_host(parser.head()->host);
    (void)parser.upstream_head(host.name);
  } catch (const Error&) {
  }
}

// Host names: a normalised name normalises to itself.
void host_name(std::string_view input) {
  try {
    network::NormalisedHost once = network::normalise_host(input);
    network::NormalisedHost twice = network::normalise_host(once.name);
    if (twice.name != once.name || twice.ip_literal != once.ip_literal)
      throw std::logic_error("normalise_host is not idempotent on " + once.name);
  } catch (const Error&) {
  }
}

namespace {

// A one-entry list opens exactly the entry's ports on the entry's own host: 443 to CONNECT and 80
// to plain HTTP when bare, else LOW..HIGH to both.
void check_entry_opens_its_ports(const network::AllowlistEntry& entry) {
  network::Allowlist one;
  one.add(entry.to_string());
  if (entry.wildcard && entry.host.size() > 250) return;  // no deeper name fits in 253 bytes
  const auto host = network::normalise_host(entry.wildcard ? "x." + entry.host : entry.host);
  const auto opens = [&](uint16_t port, bool connect) { return !one.refusal(host, port, connect); };
  const network::PortRule& p = entry.ports;
  const bool ok = p.is_default()
                      ? opens(443, true) && opens(80, false) && !opens(80, true) &&
                            !opens(443, false) && !opens(22, true) && !opens(22, false)
                      : opens(p.low, true) && opens(p.high, false) &&
                            (p.low == 1 || !opens(static_cast<uint16_t>(p.low - 1), true)) &&
                            (p.high == 65535 || !opens(static_cast<uint16_t>(p.high + 1), false));
  if (!ok) throw std::logic_error("allowlist entry " + entry.to_string() + " opens other ports");
  if (entry.wildcard && !one.refusal(network::normalise_host(entry.host), p.low ? p.low : 443, true))
    throw std::logic_error("wildcard " + entry.to_string() + " matches its base name");
}

}  // namespace

// `--net allow:` text: every entry accepted prints canonically, parses back to itself, and opens
// exactly its own ports on its own host; everything refused is an input error naming the entry.
void allowlist(std::string_view input) {
  network::Allowlist list;
  try {
    list = network::Allowlist::parse(input);
  } catch (const Error& e) {
    if (!e.input_error()) throw std::logic_error(std::string("allowlist gave a system error: ") + e.what());
    return;
  }
  std::string joined;
  try {
    for (const std::string& text : list.entries()) {
      const auto entry = network::AllowlistEntry::parse(text);
      if (entry.to_string() != text) throw std::logic_error("entry " + text + " is not canonical");
      check_entry_opens_its_ports(entry);
      joined += (joined.empty() ? "" : ",") + text;
    }
    // With the prefix: an entry for the host "allow" ("allow:443") would otherwise lose its name.
    if (network::Allowlist::parse("allow:" + joined).entries() != list.entries())
      throw std::logic_error("the canonical entries parse to another list: " + joined);
  } catch (const Error& e) {
    throw std::logic_error(std::string("an accepted allowlist's own entries were refused: ") + e.what());
  }
}

void image_json(std::string_view input) {
  if (input.empty()) return;
  const std::string_view text = input.substr(1);
  try {
    switch (static_cast<unsigned char>(input[0]) % 3) {
      case 0: (void)rootfs_builder::config_to_json(rootfs_builder::config_from_json(text)); break;
      case 1: (void)rootfs_builder::manifest_to_json(rootfs_builder::manifest_from_json(text)); break;
      default: (void)rootfs_builder::parse_reference(text); break;
    }
  } catch (const Error&) {
  }
}

void code_request(std::string_view input) {
  auto json = parse_bounded_json_or_discarded(input);  // as `sandcell code --request-json` reads it
  if (json.is_discarded()) return;
  try {
    agent::CodeRequest request = agent::parse_code_request(json);
    agent::check_code_text(request.code, 1 << 20);
  } catch (const Error& e) {
    if (!e.input_error()) throw std::logic_error(std::string("bad request gave a system error: ") + e.what());
  }
}

// sandcell-oci create: a bundle's config.json, up to the compiled seccomp filter.
void oci_config(std::string_view input) {
  auto json = parse_bounded_json_or_discarded(input);  // as load_config reads config.json
  if (json.is_discarded()) return;
  try {
    oci::Config config = oci::parse_config(json, "/bundle");
    if (config.spec.args.empty() || config.spec.cwd.empty() || config.spec.cwd[0] != '/')
      throw std::logic_error("parse_config accepted a process without args or an absolute cwd");
  } catch (const Error&) {
  }
}

namespace {

std::set<fs::path> entries_of(const std::vector<fs::path>& dirs) {
  std::set<fs::path> names;
  for (const fs::path& dir : dirs)
    for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path());
  return names;
}

}  // namespace

void layer_extract(std::string_view input, const fs::path& scratch, const std::vector<fs::path>& watched) {
  const std::set<fs::path> before = entries_of(watched);
  const fs::path archive = scratch / "layer.tar", root = scratch / "root";
  std::ofstream(archive, std::ios::binary).write(input.data(), static_cast<std::streamsize>(input.size()));
  fs::create_directory(root);
  fs::permissions(root, fs::perms(0755));
  try {
    (void)rootfs_builder::extract_layer(archive, root);
  } catch (const Error& e) {
    // A bad tar is an answer; libarchive missing (ELIBACC) would make every input one, and the
    // target would explore nothing while looking green.
    if (e.code().value() == ELIBACC) throw;
  }
  std::set<fs::path> after = entries_of(watched);
  // A "./" entry must not set the root's mode (a 0777 layer root is every container's "/").
  std::error_code ec;
  const fs::perms root_mode = fs::symlink_status(root, ec).permissions();
  const bool root_kept = fs::is_directory(fs::symlink_status(root, ec)) && root_mode == fs::perms(0755);
  after.erase(root);
  after.erase(archive);
  fs::remove_all(root);
  fs::remove(archive);
  for (const fs::path& name : after)
    if (!before.contains(name) && name.filename().string().rfind("crash-", 0) != 0)
      throw std::logic_error("extract_layer wrote outside its root: " + name.string());
  // ".wh..." once cleared the root's parent: every sibling layer of the store.
  for (const fs::path& name : before)
    if (!after.contains(name) && name != root && name != archive)
      throw std::logic_error("extract_layer removed something outside its root: " + name.string());
  if (!root_kept) throw std::logic_error("extract_layer changed or replaced its root");
}

}  // namespace sandcell::fuzz
