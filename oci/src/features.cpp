// `features` (what this runtime implements, runc's JSON shape) and `spec` (a default config).
#include "sandcell/oci/config.hpp"
#include "sandcell/oci/lifecycle.hpp"

namespace sandcell::oci {

nlohmann::json features() {
  using nlohmann::json;
  return {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", "1.1.0"},
      {"hooks",
       {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}},
      {"mountOptions",
       {"async",         "atime",   "bind",    "dev",         "diratime", "dirsync", "exec",
        "mand",          "noatime", "nodev",   "nodiratime",  "noexec",   "nomand",  "norelatime",
        "nostrictatime", "nosuid",  "private", "rbind",       "relatime", "remount", "ro",
        "rprivate",      "rshared", "rslave",  "runbindable", "rw",       "shared",  "slave",
        "strictatime",   "suid",    "sync",    "unbindable"}},
      {"linux",
       {{"namespaces", {"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}},
        {"capabilities", json::array()},
        {"cgroup",
         {{"v1", true}, {"v2", true}, {"systemd", true}, {"systemdUser", true}, {"rdma", true}}},
        {"seccomp",
         {{"enabled", true},
          {"actions",
           {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
            "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRAP"}},
          {"operators",
           {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
            "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"}},
          {"archs", {"SCMP_ARCH_X86_64"}}}},
        {"apparmor", {{"enabled", true}}},
        {"intelRdt", {{"enabled", false}}},
        {"netDevices", {{"enabled", false}}},
        {"mountExtensions", {{"idmap", {{"enabled", false}}}}},
        {"selinux", {{"enabled", false}}}}},
      {"annotations", {{"org.opencontainers.runc.version", "sandcell-oci"}}}};
}

nlohmann::json default_config() {
  using nlohmann::json;
  json caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  return {
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", {"sh"}},
        {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
        {"cwd", "/"},
        {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}},
        {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "sandcell"},
      {"mounts",
       {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/dev"}, {"type", "tmpfs"}, {"source", "tmpfs"},
         {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
        {{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"},
         {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
        {{"destination", "/dev/shm"}, {"type", "tmpfs"}, {"source", "shm"},
         {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
        {{"destination", "/dev/mqueue"}, {"type", "mqueue"}, {"source", "mqueue"},
         {"options", {"nosuid", "noexec", "nodev"}}},
        {{"destination", "/sys"}, {"type", "sysfs"}, {"source", "sysfs"},
         {"options", {"nosuid", "noexec", "nodev", "ro"}}},
        {{"destination", "/sys/fs/cgroup"}, {"type", "cgroup"}, {"source", "cgroup"},
         {"options", {"nosuid", "noexec", "nodev", "relatime", "ro"}}}}},
      {"linux",
       {{"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}},
        {"namespaces", {{{"type", "pid"}}, {{"type", "network"}}, {{"type", "ipc"}}, {{"type", "uts"}},
                        {{"type", "mount"}}, {{"type", "cgroup"}}}},
        {"maskedPaths", {"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                         "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                         "/proc/scsi"}},
        {"readonlyPaths", {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}}};
}

}  // namespace sandcell::oci
