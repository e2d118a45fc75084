// --packages: the skill's installer, under the call's network policy, against a package index
// served from a network namespace this test makes (never the internet). The index lives at
// 203.0.113.10 (TEST-NET-3, a range the proxy refuses unless --net-allow-cidr opens it) and is
// reached by name through --net-hosts.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "skills_support.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

// A PEP 503 "simple" index with one wheel, and an npm registry document with one tarball, both
// built here with python's zipfile/tarfile and served by busybox httpd inside a network namespace.
class PackageIndex {
 public:
  explicit PackageIndex(const fs::path& dir) : www_(dir / "www") {
    std::random_device random;
    char suffix[7];
    std::snprintf(suffix, sizeof suffix, "%06x", random() & 0xffffff);
    netns_ = std::string("sctest-pkg") + suffix;
    host_link_ = std::string("sctp") + suffix + "h";
    ns_link_ = std::string("sctp") + suffix + "n";
    make_packages();
    sh("ip netns add " + netns_);
    sh("ip link add " + host_link_ + " type veth peer name " + ns_link_ + " netns " + netns_);
    sh("ip addr add 203.0.113.9/30 dev " + host_link_ + " && ip link set " + host_link_ + " up");
    sh("ip -n " + netns_ + " link set lo up && ip -n " + netns_ + " addr add 203.0.113.10/30 dev " + ns_link_ +
       " && ip -n " + netns_ + " link set " + ns_link_ + " up");
    server_ = fork();
    if (server_ == 0) {
      execlp("ip", "ip", "netns", "exec", netns_.c_str(), "busybox", "httpd", "-f", "-p", "203.0.113.10:80", "-h",
             www_.c_str(), nullptr);
      _exit(127);
    }
    std::ofstream(dir / "hosts") << "203.0.113.10 pkgs.test\n";
    hosts_ = (dir / "hosts").string();
    for (int i = 0; i < 100 && std::system("busybox wget -q -O /dev/null http://203.0.113.10/simple/sctestpkg/ 2>/dev/null") != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~PackageIndex() {
    if (server_ > 0) {
      kill(server_, SIGKILL);
      waitpid(server_, nullptr, 0);
    }
    std::system(("ip link del " + host_link_ + " 2>/dev/null").c_str());
    std::system(("ip netns del " + netns_ + " 2>/dev/null").c_str());
  }
  const std::string& hosts_file() const { return hosts_; }

 private:
  void make_packages() {
    fs::create_directories(www_ / "simple" / "sctestpkg");
    fs::create_directories(www_ / "packages");
    std::string script = www_.parent_path() / "make.py";
    std::ofstream(script) <<
        "import zipfile, sys\n"
        "www = sys.argv[1]\n"
        "whl = 'sctestpkg-1.0-py3-none-any.whl'\n"
        "with zipfile.ZipFile(www + '/packages/' + whl, 'w') as z:\n"
        "    z.writestr('sctestpkg/__init__.py', 'VALUE = 42\\n')\n"
        "    z.writestr('sctestpkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: sctestpkg\\nVersion: 1.0\\n')\n"
        "    z.writestr('sctestpkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: sandcell-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n"
        "    z.writestr('sctestpkg-1.0.dist-info/RECORD', 'sctestpkg/__init__.py,,\\nsctestpkg-1.0.dist-info/METADATA,,\\n'\n"
        "               'sctestpkg-1.0.dist-info/WHEEL,,\\nsctestpkg-1.0.dist-info/RECORD,,\\n')\n"
        "open(www + '/simple/sctestpkg/index.html', 'w').write(\n"
        "    '<!DOCTYPE html><html><body><a href=\"../../packages/' + whl + '\">' + whl + '</a></body></html>\\n')\n"
        // An npm registry: the package document at /<name>, the tarball elsewhere.
        "import tarfile, io, json, hashlib\n"
        "buf = io.BytesIO()\n"
        "with tarfile.open(fileobj=buf, mode='w:gz') as t:\n"
        "    for name, text in [('package/package.json', json.dumps({'name': 'sctestnpm', 'version': '1.0.0', 'main': 'index.js'})),\n"
        "                       ('package/index.js', 'module.exports = 42;\\n')]:\n"
        "        data = text.encode(); info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))\n"
        "tgz = buf.getvalue()\n"
        "open(www + '/packages/sctestnpm-1.0.0.tgz', 'wb').write(tgz)\n"
        "doc = {'name': 'sctestnpm', 'dist-tags': {'latest': '1.0.0'}, 'versions': {'1.0.0': {'name': 'sctestnpm',\n"
        "       'version': '1.0.0', 'dist': {'tarball': 'http://pkgs.test/packages/sctestnpm-1.0.0.tgz',\n"
        "       'shasum': hashlib.sha1(tgz).hexdigest()}}}}\n"
        "open(www + '/sctestnpm', 'w').write(json.dumps(doc))\n";
    sh("python3 " + script + " " + www_.string());
  }

  fs::path www_;
  std::string netns_, host_link_, ns_link_, hosts_;
  pid_t server_ = -1;
};

class Packages : public Skills {
 protected:
  PackageIndex index_{dir_.path};
  // pip against the test index; no retries, so a refused connection fails at once.
  std::vector<std::string> pip_flags(const std::string& net) {
    std::vector<std::string> flags = {"--packages", "sctestpkg==1.0", "--net", net, "--timeout", "120",
                                      "--env", "PIP_INDEX_URL=http://pkgs.test/simple", "--env", "PIP_TRUSTED_HOST=pkgs.test",
                                      "--env", "PIP_RETRIES=0", "--env", "PIP_TIMEOUT=10"};
    if (net != "none")  // the hosts file and the opened range only mean something to the proxy
      flags.insert(flags.end(), {"--net-hosts", index_.hosts_file(), "--net-allow-cidr", "203.0.113.8/30"});
    return flags;
  }
};

TEST_F(Packages, PipInstallsFromTheAllowedIndexIntoTheWorkspace) {
  auto r = code("python", "import sctestpkg\nprint('value', sctestpkg.VALUE)\n", pip_flags("allow:pkgs.test"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "value 42\n");
  ASSERT_EQ(r.record["phases"].size(), 2u);
  EXPECT_EQ(r.record["phases"][0]["name"], "install");
  EXPECT_EQ(r.record["phases"][0]["status"], "ok");
  EXPECT_TRUE(r.record["report"]["events"]["blocked_connections"].empty());
}

TEST_F(Packages, InstalledPackagesStayInTheSession) {
  auto first = code("python", "import sctestpkg\n", [&] {
    auto f = pip_flags("allow:pkgs.test");
    f.insert(f.end(), {"--session", "pk"});
    return f;
  }());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto second = code("python", "import sctestpkg\nprint(sctestpkg.VALUE + 1)\n", {"--session", "pk"});
  EXPECT_EQ(second.record["stdout"], "43\n") << second.out;
}

TEST_F(Packages, NpmInstallsFromTheAllowedRegistry) {
  auto r = code("node", "console.log('value', require('sctestnpm'))\n",
                {"--packages", "sctestnpm@1.0.0", "--net", "allow:pkgs.test", "--net-hosts", index_.hosts_file(),
                 "--net-allow-cidr", "203.0.113.8/30", "--env", "npm_config_registry=http://pkgs.test/",
                 "--env", "npm_config_fetch_retries=0", "--timeout", "120"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "value 42\n");
  EXPECT_EQ(r.record["phases"][0]["name"], "install");
}

TEST_F(Packages, InstallObeysTheNetworkPolicy) {
  auto r = code("python", "import sctestpkg\n", pip_flags("none"));
  EXPECT_EQ(r.record["phase"], "install") << r.out;
  EXPECT_EQ(r.record["error"]["class"], "install_error");
  auto other = code("python", "import sctestpkg\n", pip_flags("allow:pypi.org"));
  EXPECT_EQ(other.record["error"]["class"], "install_error") << other.out;
  EXPECT_FALSE(other.record["report"]["events"]["blocked_connections"].empty());
}

}  // namespace
}  // namespace sandcell::test
