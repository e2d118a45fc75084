#include "oci_bundle.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace sandcell::test {

std::string oci_binary() { return SANDCELL_OCI_BIN; }

OciBundle::OciBundle() {
  // Containers' inits outlive `create`: as a subreaper this test process reaps them (conmon
  // and containerd-shim play this part in real use).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::filesystem::create_directories(dir());
  CliRun spec = run_program({oci_binary(), "spec", "--bundle", dir()});
  if (spec.exit_code != 0) throw std::runtime_error("sandcell-oci spec: " + spec.err);
  config = nlohmann::json::parse(read_text(dir() + "/config.json"));
  config["root"]["path"] = test_rootfs();
  config["root"]["readonly"] = true;
}

OciBundle::~OciBundle() {
  CliRun list = oci({"list", "-q"});
  std::istringstream ids(list.out);
  for (std::string id; std::getline(ids, id);) oci({"delete", "--force", id});
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void OciBundle::write() const { std::ofstream(dir() + "/config.json") << config.dump(2); }

CliRun OciBundle::oci(const std::vector<std::string>& args, const std::string& input) const {
  std::vector<std::string> full{oci_binary(), "--root", state_root()};
  full.insert(full.end(), args.begin(), args.end());
  CliRun run = run_program(full, input);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return run;
}

std::string OciBundle::status(const std::string& id) const {
  CliRun state = oci({"state", id});
  if (state.exit_code != 0 || !state.record.is_object()) return "";
  return state.record.value("status", "");
}

std::string OciBundle::wait_for_status(const std::string& id, const std::string& wanted) const {
  std::string seen;
  for (int i = 0; i < 200; ++i) {
    seen = status(id);
    if (seen == wanted) break;
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return seen;
}

}  // namespace sandcell::test
