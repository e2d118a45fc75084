#include "rootless_user.hpp"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sandcell/base/number.hpp"

namespace sandcell::test {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPrefix = "sandcell-ci-";

void run_or_throw(const std::vector<std::string>& argv) {
  CliRun r = run_program(argv);
  if (r.exit_code != 0) throw std::runtime_error(argv[0] + " " + argv[1] + " failed: " + r.err);
}

// Users a crashed test program left behind (its pid is gone) are removed before making a new one.
void remove_stale_users() {
  std::ifstream passwd("/etc/passwd");
  for (std::string line; std::getline(passwd, line);) {
    if (!line.starts_with(kPrefix)) continue;
    std::string name = line.substr(0, line.find(':'));
    auto pid = parse_number<pid_t>(name.substr(std::string(kPrefix).size()));
    if (pid && kill(*pid, 0) != 0 && errno == ESRCH) run_program({"/usr/sbin/userdel", name});
  }
}

}  // namespace

RootlessUser::RootlessUser() : name_(kPrefix + std::to_string(getpid())) {
  remove_stale_users();
  char tmpl[] = "/tmp/sandcell-rootless-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
  dir_ = tmpl;
  fs::permissions(dir_, fs::perms(0755));
  const std::string range =
      std::to_string(kSubIdStart) + "-" + std::to_string(kSubIdStart + kSubIdCount - 1);
  run_or_throw({"/usr/sbin/useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                home(), "--shell", "/usr/sbin/nologin", name_});
  run_or_throw({"/usr/sbin/usermod", "--add-subuids", range, "--add-subgids", range, name_});
  const passwd* pw = getpwnam(name_.c_str());
  if (pw == nullptr) throw std::runtime_error("getpwnam " + name_);
  uid_ = pw->pw_uid;
  gid_ = pw->pw_gid;
  fs::create_directories(home());
  fs::create_directories(dir_ + "/bin");
  for (const char* exe : {"sandcell", "sandcell-net", "sandcell-images"})
    fs::copy_file(fs::path(sandcell_binary()).parent_path() / exe, dir_ + "/bin/" + exe);
  run_or_throw({"/bin/cp", "-a", test_rootfs(), rootfs()});
  run_or_throw({"/bin/chown", "-R", name_ + ":" + name_, home()});
}

RootlessUser::~RootlessUser() {
  for (pid_t pid : processes()) kill(pid, SIGKILL);  // only after a failed test
  run_program({"/usr/sbin/userdel", name_});
  std::error_code ec;
  fs::remove_all(dir_, ec);
  fs::remove_all(state_dir(), ec);
}

CliRun RootlessUser::sandcell(const std::vector<std::string>& args, const std::string& input,
                              const std::vector<std::string>& prefix) const {
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(),
              {"/usr/bin/setpriv", "--reuid=" + std::to_string(uid_),
               "--regid=" + std::to_string(gid_), "--init-groups", "/usr/bin/env", "-i", "-C", dir_,
               "HOME=" + home(), "PATH=/usr/bin:/bin", dir_ + "/bin/sandcell"});
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, input);
}

std::vector<pid_t> RootlessUser::processes() const {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    auto pid = parse_number<pid_t>(entry.path().filename().string());
    struct stat st {};
    if (!pid || stat(entry.path().c_str(), &st) != 0) continue;
    if (st.st_uid == uid_ || (st.st_uid >= kSubIdStart && st.st_uid < kSubIdStart + kSubIdCount))
      found.push_back(*pid);
  }
  return found;
}

std::vector<std::string> RootlessUser::leftover_state() const {
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_dir(), ec)) {
    if (entry.path().filename() == "scratch" && fs::is_empty(entry.path(), ec)) continue;
    left.push_back(entry.path().string());
  }
  return left;
}

}  // namespace sandcell::test
