// skill.json's warm-pool fields (docs/architecture.md, "The warm pool"): pool_run with its
// placeholders, pool_script, preload; what cannot be pooled is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandcell/agent/skill.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

struct PoolSkill : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("sandcell-pool-skill-" + std::to_string(getpid()));
  void SetUp() override { fs::create_directories(dir / "probe"); }
  void TearDown() override { fs::remove_all(dir); }
  agent::Skill load(const std::string& extra) {
    std::ofstream(dir / "probe/Dockerfile") << "FROM scratch\n";
    std::ofstream(dir / "probe/skill.json")
        << R"({"name": "probe", "source_file": "main.py", "run": ["python3", "/workspace/main.py"])" << extra << "}";
    return agent::load_skill((dir / "probe").string());
  }
};

TEST_F(PoolSkill, PoolRunExpandsTheScriptAndThePreloads) {
  std::ofstream(dir / "probe/boot.py") << "print('boot')\n";
  agent::Skill s = load(R"(, "pool_run": ["python3", "-c", "{script}", "{preload}"], "pool_script": "boot.py",
                          "preload": ["numpy", "pandas"])");
  EXPECT_EQ(agent::pool_command(s), (std::vector<std::string>{"python3", "-c", "print('boot')\n", "numpy", "pandas"}));
}

TEST_F(PoolSkill, WithoutPoolRunOrWithACompileStepItIsNotPooled) {
  EXPECT_THROW(agent::pool_command(load("")), Error);
  EXPECT_THROW(agent::pool_command(load(R"(, "compile": ["cc", "main.c"], "pool_run": ["x"])")), Error);
  EXPECT_THROW(agent::pool_command(load(R"(, "pool_run": ["x", "{script}"], "pool_script": "missing.py")")), Error);
}

TEST_F(PoolSkill, RefusesAScriptOutsideTheFolderAndPreloadsThatAreNotNames) {
  EXPECT_THROW(load(R"(, "pool_script": "../../etc/passwd")"), Error);
  EXPECT_THROW(load(R"(, "pool_script": ".hidden")"), Error);
  EXPECT_THROW(load(R"(, "preload": ["numpy; import os"])"), Error);
  EXPECT_THROW(load(R"(, "preload": [""])"), Error);
  EXPECT_THROW(load(R"(, "preload": "numpy")"), Error);
}

// The shipped python skill is pooled, with numpy preloaded and its bootstrap readable.
TEST(PoolSkillShipped, PythonIsPooled) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(""));
  const agent::Skill& python = catalog.find("python");
  EXPECT_EQ(python.preload, (std::vector<std::string>{"numpy"}));
  std::vector<std::string> argv = agent::pool_command(python);
  ASSERT_GE(argv.size(), 4u);
  EXPECT_NE(argv[2].find("os.read(0, 1)"), std::string::npos);
}

}  // namespace
}  // namespace sandcell::test
