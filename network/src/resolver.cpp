// The proxy's resolver: getaddrinfo, or a hosts file that replaces DNS entirely.
#include "sandcell/network/resolver.hpp"

#include <netdb.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

void add_hosts_line(std::map<std::string, std::vector<IpAddress>>& hosts, const std::string& line) {
  std::istringstream words(line.substr(0, line.find('#')));
  std::string address_text;
  if (!(words >> address_text)) return;
  const auto address = IpAddress::parse(address_text);
  if (!address) throw Error::invalid("not an IP address: " + address_text);
  bool named = false;
  for (std::string name; words >> name; named = true) {
    auto& list = hosts[normalise_host(name).name];
    if (std::find(list.begin(), list.end(), *address) == list.end()) list.push_back(*address);
  }
  if (!named) throw Error::invalid("no name for " + address_text);
}

}  // namespace

Resolver Resolver::system() {
  return Resolver();
}

Resolver Resolver::from_hosts_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(errno, "open hosts file " + file.string());
  Resolver resolver;
  resolver.hosts_only_ = true;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    try {
      add_hosts_line(resolver.hosts_, line);
    } catch (const Error& e) {
      throw Error::invalid(file.string() + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return resolver;
}

Resolution Resolver::resolve(const std::string& name) const {
  if (hosts_only_) {
    const auto found = hosts_.find(name);
    if (found == hosts_.end()) return {.addresses = {}, .error = "not in the hosts file"};
    return {.addresses = found->second, .error = ""};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &found);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, &freeaddrinfo);
  if (rc != 0) return {.addresses = {}, .error = gai_strerror(rc)};
  Resolution resolution;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const auto address = IpAddress::from_sockaddr(ai->ai_addr);
    if (!address) continue;
    auto& list = resolution.addresses;
    if (std::find(list.begin(), list.end(), *address) == list.end()) list.push_back(*address);
  }
  if (resolution.addresses.empty()) resolution.error = "no addresses";
  return resolution;
}

}  // namespace sandcell::network
