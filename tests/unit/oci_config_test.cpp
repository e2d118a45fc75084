// config.json → runtime::Spec (no root, no kernel): fields land where the engine reads them,
// and every invalid field is named in the error.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "sandcell/oci/config.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/oci/sealed_exe.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;

json minimal() {
  json config = default_config();
  config["process"]["args"] = {"/bin/true"};
  return config;
}

std::string error_of(const json& config) {
  try {
    parse_config(config, "/bundle");
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error()) << e.what();
    return e.what();
  }
  return "";
}

TEST(OciConfigParse, DefaultConfig_ParsesIntoAContainerSpec) {
  Config c = parse_config(minimal(), "/bundle");
  ASSERT_TRUE(c.spec.container);
  EXPECT_EQ(c.spec.container->rootfs, "/bundle/rootfs");
  EXPECT_TRUE(c.spec.container->rootfs_readonly);
  EXPECT_EQ(c.spec.hostname, "sandcell");
  EXPECT_EQ(c.spec.args, std::vector<std::string>{"/bin/true"});
  EXPECT_TRUE(c.spec.no_new_privileges);
  EXPECT_EQ(c.spec.container->capabilities.bounding.size(), 3u);
  ASSERT_EQ(c.spec.rlimits.size(), 1u);
  EXPECT_EQ(c.spec.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(c.spec.container->namespaces.size(), 6u);
  EXPECT_EQ(c.spec.container->mounts.size(), 7u);
}

TEST(OciConfigParse, ProcessUserTerminalAndOom_AreRead) {
  json config = minimal();
  config["process"]["user"] = {{"uid", 1000}, {"gid", 100}, {"umask", 18}, {"additionalGids", {5, 6}}};
  config["process"]["terminal"] = true;
  config["process"]["consoleSize"] = {{"height", 40}, {"width", 120}};
  config["process"]["oomScoreAdj"] = 500;
  config["process"]["cwd"] = "/work";
  Config c = parse_config(config, "/b");
  EXPECT_EQ(c.spec.uid, 1000u);
  EXPECT_EQ(c.spec.gid, 100u);
  EXPECT_EQ(c.spec.additional_gids, (std::vector<gid_t>{5, 6}));
  EXPECT_EQ(c.spec.container->umask, 18u);
  EXPECT_TRUE(c.spec.container->terminal);
  EXPECT_EQ(c.spec.container->console_rows, 40);
  EXPECT_EQ(c.spec.container->console_columns, 120);
  EXPECT_EQ(c.spec.container->oom_score_adj, 500);
  EXPECT_EQ(c.spec.cwd, "/work");
}

TEST(OciConfigParse, MountOptions_BecomeFlagsPropagationAndData) {
  runtime::ContainerMount m = mount_from_options({"rbind", "ro", "nosuid", "rprivate", "mode=755", "size=1k"});
  EXPECT_EQ(m.flags, static_cast<unsigned long>(MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID));
  EXPECT_EQ(m.propagation, static_cast<unsigned long>(MS_PRIVATE | MS_REC));
  EXPECT_EQ(m.data, "mode=755,size=1k");
  EXPECT_EQ(mount_from_options({"ro", "rw"}).flags, 0u) << "later options win";
}

TEST(OciConfigParse, BindMountSource_IsTakenRelativeToTheBundle) {
  json config = minimal();
  config["mounts"] = {{{"destination", "/data"}, {"type", "bind"}, {"source", "data"}, {"options", {"rbind"}}}};
  Config c = parse_config(config, "/bundle");
  EXPECT_EQ(c.spec.container->mounts[0].source, "/bundle/data");
}

TEST(OciConfigParse, LinuxSection_NamespacesMappingsResourcesSysctlDevices) {
  json config = minimal();
  config["linux"]["namespaces"] = {{{"type", "mount"}}, {{"type", "network"}, {"path", "/run/netns/x"}}, {{"type", "user"}}};
  config["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 1000}, {"size", 10}}};
  config["linux"]["resources"] = {{"memory", {{"limit", 1 << 20}}}, {"pids", {{"limit", 7}}},
                                  {"cpu", {{"quota", 50000}, {"period", 100000}}}};
  config["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}};
  config["linux"]["devices"] = {{{"path", "/dev/fuse"}, {"type", "c"}, {"major", 10}, {"minor", 229}}};
  config["linux"]["personality"] = {{"domain", "LINUX32"}};
  config["linux"]["rootfsPropagation"] = "rshared";
  Config c = parse_config(config, "/b");
  const runtime::Container& k = *c.spec.container;
  EXPECT_EQ(k.namespaces[1].path, "/run/netns/x");
  EXPECT_EQ(k.uid_mappings[0].host_id, 1000u);
  EXPECT_EQ(c.resources["pids"]["limit"], 7)
      << "kept as written: planned per cgroup version at create";
  EXPECT_EQ(k.sysctl.at("net.ipv4.ip_forward"), "1");
  EXPECT_EQ(k.devices[0].minor, 229u);
  EXPECT_TRUE(k.personality.has_value());
  EXPECT_EQ(k.rootfs_propagation, static_cast<unsigned long>(MS_SHARED | MS_REC));
}

TEST(OciConfigParse, Seccomp_CompilesToAPlainFilterWithoutNotify) {
  json config = minimal();
  config["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                                {"syscalls", {{{"names", {"keyctl"}}, {"action", "SCMP_ACT_ERRNO"}}}}};
  Config c = parse_config(config, "/b");
  const std::optional<runtime::SeccompProgram> seccomp = c.spec.seccomp.program();
  ASSERT_TRUE(seccomp);
  EXPECT_FALSE(seccomp->notify.has_value());
  EXPECT_FALSE(seccomp->instructions.empty());
}

TEST(OciConfigParse, Hooks_KeepTheirOrderArgsAndTimeout) {
  json config = minimal();
  config["hooks"]["prestart"] = {{{"path", "/a"}}, {{"path", "/b"}, {"args", {"b", "x"}}, {"timeout", 3}}};
  Config c = parse_config(config, "/b");
  ASSERT_EQ(c.hooks.prestart.size(), 2u);
  EXPECT_EQ(c.hooks.prestart[1].args, (std::vector<std::string>{"b", "x"}));
  EXPECT_EQ(c.hooks.prestart[1].timeout_s, 3);
}

TEST(OciConfigParse, InvalidFields_AreNamed) {
  json c = minimal();
  c["process"]["rlimits"] = {{{"type", "RLIMIT_BOGUS"}, {"soft", 1}, {"hard", 1}}};
  EXPECT_EQ(error_of(c), "process.rlimits[0].type: unknown rlimit type 'RLIMIT_BOGUS'");
  c = minimal();
  c["linux"]["namespaces"] = {{{"type", "mount"}}, {{"type", "wormhole"}}};
  EXPECT_EQ(error_of(c), "linux.namespaces[1].type: unknown namespace 'wormhole'");
  c = minimal();
  c["root"].erase("path");
  EXPECT_EQ(error_of(c), "root.path: missing");
  c = minimal();
  c["mounts"][2]["options"] = {"nosuid", 7};
  EXPECT_EQ(error_of(c), "mounts[2].options[1]: expected a string, got 7");
  c = minimal();
  c["hooks"]["poststop"] = {{{"path", "relative"}}};
  EXPECT_EQ(error_of(c), "hooks.poststop[0].path: must be absolute");
}

TEST(OciConfigParse, TimeOffsets_AreReadForANewTimeNamespace) {
  json c = minimal();
  c["linux"]["namespaces"].push_back({{"type", "time"}});
  c["linux"]["timeOffsets"] = {{"monotonic", {{"secs", -5}, {"nanosecs", 999999999}}}, {"boottime", {{"secs", 7}}}};
  Config config = parse_config(c, "/b");
  const std::vector<runtime::TimeOffset>& offsets = config.spec.container->time_offsets;
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_EQ(offsets[0].clock, "boottime");  // nlohmann orders object keys
  EXPECT_EQ(offsets[0].secs, 7);
  EXPECT_EQ(offsets[0].nanosecs, 0u);
  EXPECT_EQ(offsets[1].clock, "monotonic");
  EXPECT_EQ(offsets[1].secs, -5);
  EXPECT_EQ(offsets[1].nanosecs, 999999999u);
  c["linux"]["timeOffsets"] = json::object();
  EXPECT_TRUE(parse_config(c, "/b").spec.container->time_offsets.empty());
}

TEST(OciConfigParse, TimeOffsets_BadClocksRangesAndNamespaces_AreNamed) {
  json base = minimal();
  base["linux"]["namespaces"].push_back({{"type", "time"}});
  json c = base;
  c["linux"]["timeOffsets"] = {{"realtime", {{"secs", 1}}}};
  EXPECT_EQ(error_of(c), "linux.timeOffsets.realtime: unknown clock (a time namespace offsets monotonic and boottime)");
  c = base;
  c["linux"]["timeOffsets"] = {{"boottime", {{"nanosecs", 1000000000}}}};
  EXPECT_EQ(error_of(c), "linux.timeOffsets.boottime.nanosecs: 1000000000 is not below 1000000000");
  c = base;
  c["linux"]["timeOffsets"] = {{"boottime", {{"nanosecs", -1}}}};
  EXPECT_NE(error_of(c).find("linux.timeOffsets.boottime.nanosecs"), std::string::npos);
  c = base;
  c["linux"]["timeOffsets"] = {{"monotonic", {{"secs", 4611686019LL}}}};
  EXPECT_EQ(error_of(c), "linux.timeOffsets.monotonic.secs: 4611686019 is out of range (at most 4611686018 either way)");
  c = base;
  c["linux"]["timeOffsets"] = {{"monotonic", {{"secs", "1"}}}};
  EXPECT_NE(error_of(c).find("linux.timeOffsets.monotonic.secs"), std::string::npos);
  c = base;
  c["linux"]["timeOffsets"] = {{"monotonic", 5}};
  EXPECT_NE(error_of(c).find("linux.timeOffsets.monotonic"), std::string::npos);
  c = minimal();  // no time namespace
  c["linux"]["timeOffsets"] = {{"monotonic", {{"secs", 1}}}};
  EXPECT_EQ(error_of(c), "linux.timeOffsets: needs a new time namespace (a linux.namespaces entry of type \"time\")");
  c["linux"]["namespaces"].push_back({{"type", "time"}, {"path", "/proc/1/ns/time"}});
  EXPECT_EQ(error_of(c), "linux.timeOffsets: cannot be applied to the time namespace joined by linux.namespaces[6].path "
                         "(its offsets were fixed when its first process entered it)");
}

TEST(OciFeatures, NamespacesIncludeTime) {
  const json namespaces = features()["linux"]["namespaces"];
  EXPECT_EQ(namespaces, json({"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}));
}

TEST(OciConfigParse, UserNamespaceAndMappings_GoTogetherAndPathsAreAbsolute) {
  json c = minimal();
  c["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}};
  EXPECT_EQ(error_of(c), "linux.gidMappings: set, but linux.namespaces has no user namespace");
  c = minimal();
  c["linux"]["namespaces"].push_back({{"type", "user"}});
  EXPECT_EQ(error_of(c), "linux.namespaces[6]: a new user namespace needs linux.uidMappings and linux.gidMappings");
  c["linux"]["namespaces"][6]["path"] = "/proc/1/ns/user";
  EXPECT_EQ(error_of(c), "") << "a joined one brings its own maps";
  c["linux"]["namespaces"][6]["path"] = "proc/1/ns/user";
  EXPECT_EQ(error_of(c), "linux.namespaces[6].path: 'proc/1/ns/user' is not absolute");
}

TEST(OciConfigParse, UnknownFields_AreIgnored) {
  json c = minimal();
  c["vm"] = {{"hypervisor", {{"path", "/x"}}}};
  c["process"]["selinuxLabel"] = "x";
  EXPECT_EQ(error_of(c), "");
  c["process"]["capabilities"]["bounding"].push_back("CAP_NOT_IN_THIS_KERNEL");
  EXPECT_EQ(error_of(c), "") << "an unknown capability is a warning, as the runtime-spec says";
}

TEST(OciConfigParse, IntelRdt_IsRefusedNotIgnored) {
  json c = minimal();
  c["linux"]["intelRdt"] = {{"closID", "x"}};
  EXPECT_EQ(error_of(c), "linux.intelRdt: Intel RDT (resctrl) is not supported by sandcell-oci");
}

TEST(OciConfigParse, NetDevices_AreRefusedNotIgnored) {
  json c = minimal();
  c["linux"]["netDevices"] = {{"eth1", {{"name", "net1"}}}};
  EXPECT_EQ(error_of(c),
            "linux.netDevices: moving host network devices into the container is not supported by "
            "sandcell-oci");
}

TEST(OciSignals, NamesAndNumbers) {
  EXPECT_EQ(parse_signal("KILL"), 9);
  EXPECT_EQ(parse_signal("SIGTERM"), 15);
  EXPECT_EQ(parse_signal("sigusr1"), 10);
  EXPECT_EQ(parse_signal("2"), 2);
  EXPECT_THROW(parse_signal("NOPE"), Error);
  EXPECT_THROW(parse_signal("0"), Error);
}

// A writable shared mapping makes F_SEAL_WRITE fail with EBUSY (as pages the kernel cannot
// account for do, the case CI met): the seal is tried again, and holds once the mapping is gone;
// a mapping that stays is an error that says EBUSY.
TEST(OciSealedCopy, SealingWaitsOutABusyFileThenSealsOrSaysBusy) {
  for (bool unmap : {true, false}) {
    runtime::UniqueFd memfd(memfd_create("seal-test", MFD_ALLOW_SEALING | MFD_CLOEXEC));
    ASSERT_TRUE(memfd);
    ASSERT_EQ(ftruncate(memfd.get(), 4096), 0);
    void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
    ASSERT_NE(map, MAP_FAILED);
    ASSERT_EQ(fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_WRITE), -1);
    ASSERT_EQ(errno, EBUSY);
    std::thread unmapper;
    if (unmap)
      unmapper = std::thread([map] {
        usleep(30'000);
        munmap(map, 4096);
      });
    if (unmap) {
      EXPECT_NO_THROW(seal_against_writes(memfd.get()));
      unmapper.join();
      EXPECT_EQ(fcntl(memfd.get(), F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
      EXPECT_EQ(write(memfd.get(), "x", 1), -1);
    } else {
      try {
        seal_against_writes(memfd.get());
        ADD_FAILURE() << "sealed a file with a writable shared mapping";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("seal the runtime copy"), std::string::npos) << e.what();
        EXPECT_EQ(e.code().value(), EBUSY) << e.what();
      }
      munmap(map, 4096);
    }
  }
}

}  // namespace
}  // namespace sandcell::oci
