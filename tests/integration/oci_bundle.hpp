#pragma once
// A bundle (config.json from `sandcell-oci spec`, root.path = the busybox test rootfs) and a
// private --root for the real sandcell-oci binary. Containers left over are deleted --force.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandcell_cli.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {

std::string oci_binary();

class OciBundle {
 public:
  OciBundle();
  ~OciBundle();
  OciBundle(const OciBundle&) = delete;
  OciBundle& operator=(const OciBundle&) = delete;

  nlohmann::json config;     // edit, then write()
  void write() const;
  std::string dir() const { return (tree_.path / "bundle").string(); }
  std::string state_root() const { return (tree_.path / "state").string(); }
  std::string path(const std::string& name) const { return (tree_.path / name).string(); }

  // sandcell-oci --root <state_root> ARGS...
  CliRun oci(const std::vector<std::string>& args, const std::string& input = "") const;
  // The status field of `state ID`, or "" when it fails.
  std::string status(const std::string& id) const;
  // Polls (bounded) until `state ID` says `wanted`; returns the last status seen.
  std::string wait_for_status(const std::string& id, const std::string& wanted) const;

 private:
  TempTree tree_{"sc-oci"};
};

}  // namespace sandcell::test
