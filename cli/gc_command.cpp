#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "sandcell/base/shared_disk.hpp"
#include "sandcell/base/stale_disk_mounts.hpp"
#include "sandcell/runtime/owned_temp_dir.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::cli {

void add_gc_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* gc = app.add_subcommand(
      "gc",
      "Remove what crashed runs left behind: cgroups under the sandcell parent whose "
      "supervisor is gone, their run state, id-range claims and network rules; and the "
      "network namespaces runs made ahead for the next; the image store's temporary directories "
      "that a killed build, pull or load left, and the directories of a pool's killed zygotes; the "
      "workspace disks (and their loop devices) of "
      "`sandcell code` calls that died, the disks of Docker API containers whose supervisor was "
      "killed, and the disks of Docker API volumes no running container uses. Live runs and builds "
      "are not touched.");
  auto state_root = std::make_shared<std::string>();
  gc->add_option("--state", *state_root, "Run state directory (default /run/sandcell, or $SANDCELL_STATE)");
  gc->callback([&action, state_root, globals] {
    action = [state_root, globals] {
      // Leftover veths and nft rules are removed through libnl and libnftables.
      if (!can_load_network_libraries()) hand_over_to_network_twin();
      if (geteuid() != 0) {
        std::cerr << "sandcell: gc must run as root (it removes cgroups)\n";
        return 125;
      }
      for (const std::string& line : runtime::collect_garbage(*state_root))
        std::cout << "removed " << line << "\n";
      // A live builder holds each of its temporaries (flock); a killed one's are nobody's.
      for (const std::string& dir : runtime::remove_abandoned_temp_dirs(globals->store_root() + "/tmp"))
        std::cout << "removed " << dir << "\n";
      // A pool's zygote whose supervisor was killed (sandcell/agent/zygote.hpp): its directory.
      for (const std::string& dir : runtime::remove_abandoned_temp_dirs(
               globals->store_root() + "/zygotes", std::chrono::seconds(10)))
        std::cout << "removed " << dir << "\n";
      // The sessions directory may be elsewhere ($SANDCELL_SESSIONS): `sandcell code` sweeps it.
      // A Docker API container's disk whose supervisor was killed (its lock free) goes too.
      for (auto [dir, what] : {std::pair{"/code-runs", "workspace"}, {"/sessions", "workspace"},
                               {"/docker/containers", "container"}})
        if (int n = unmount_stale_disks(globals->store_root() + dir))
          std::cout << "unmounted " << n << " " << what << " disk(s) under "
                    << globals->store_root() + dir << "\n";
      // A Docker API volume's disk mounted with no user (its supervisors killed): under its
      // mount.lock, so that no container joins it meanwhile (sandcell/base/shared_disk.hpp).
      if (int n = unmount_unused_shared_disks(globals->store_root() + "/docker/volumes"))
        std::cout << "unmounted " << n << " volume disk(s) under " << globals->store_root() + "/docker/volumes\n";
      return 0;
    };
  });
}

}  // namespace sandcell::cli
