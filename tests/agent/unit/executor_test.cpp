// Which executable the real executor spawns when nobody names one.
#include "sandcell/agent_service/executor.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace sandcell::agent_service {
namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    char tmpl[] = "/tmp/sandcell-executor-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

// `code` lives in sandcell-images: executions go there directly, not through the lean sandcell
// (one exec and a static glibc start fewer per execution); an installation without it (or a
// build tree that names another layout) still gets `sandcell`.
TEST(SubprocessExecutor, SpawnsSandcellImagesWhenItIsInstalledBesideUs) {
  ScratchDir dir;
  EXPECT_EQ(sandcell_bin_in(dir.path), (dir.path / "sandcell").string());
  const fs::path images = dir.path / "sandcell-images";
  std::ofstream(images) << "#!/bin/sh\n";
  chmod(images.c_str(), 0644);
  EXPECT_EQ(sandcell_bin_in(dir.path), (dir.path / "sandcell").string()) << "not executable";
  chmod(images.c_str(), 0755);
  EXPECT_EQ(sandcell_bin_in(dir.path), images.string());
}

TEST(SubprocessExecutor, SandcellBinFromTheEnvironmentWins) {
  setenv("SANDCELL_BIN", "/opt/x/sandcell", 1);
  EXPECT_EQ(default_sandcell_bin(), "/opt/x/sandcell");
  unsetenv("SANDCELL_BIN");
}

}  // namespace
}  // namespace sandcell::agent_service
