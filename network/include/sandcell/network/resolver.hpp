#pragma once
// Name resolution for the proxy: the system resolver (getaddrinfo), or only a hosts file
// (`--net-hosts FILE`), so tests map names to their own test hosts and never touch real DNS.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"

namespace sandcell::network {

struct Resolution {
  std::vector<IpAddress> addresses;  // empty when the name does not resolve
  std::string error;                 // why, when empty
};

class Resolver {
 public:
  // getaddrinfo (TCP, both families).
  static Resolver system();
  // Hosts-file format: "ADDRESS NAME [ALIAS...]", '#' comments. Names are normalised; when this
  // resolver is used, names not in the file do not resolve. Throws Error on unreadable files and
  // Error::invalid on bad lines.
  static Resolver from_hosts_file(const std::filesystem::path& file);

  // `name` is a normalised host name (see normalise_host()).
  Resolution resolve(const std::string& name) const;
  bool uses_hosts_file() const { return hosts_only_; }

 private:
  bool hosts_only_ = false;
  std::map<std::string, std::vector<IpAddress>> hosts_;
};

}  // namespace sandcell::network
