// skill.json's warm-pool fields (docs/architecture.md, "The warm pool"): pool_run with its
// placeholders, pool_script, preload; what cannot be pooled is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandcell/agent/skill.hpp"
#include "sandcell/agent/zygote.hpp"
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

// "{script_path}": the interpreter loads the bootstrap from a file the member puts in the
// workspace's .sandcell (node's --require), not from the command line.
TEST_F(PoolSkill, ScriptPathNamesTheBootstrapsPlaceInTheWorkspace) {
  std::ofstream(dir / "probe/boot.js") << "// boot\n";
  agent::Skill s = load(R"(, "pool_run": ["node", "--require", "{script_path}", "/workspace/main.js"], "pool_script": "boot.js")");
  EXPECT_EQ(agent::pool_command(s),
            (std::vector<std::string>{"node", "--require", "/workspace/.sandcell/boot.js", "/workspace/main.js"}));
  EXPECT_TRUE(agent::pool_script_in_workspace(s));
  EXPECT_EQ(agent::pool_script_workspace_path(s), ".sandcell/boot.js");
  EXPECT_EQ(agent::pool_script_text(s), "// boot\n");
  EXPECT_FALSE(agent::pool_script_in_workspace(load(R"(, "pool_run": ["python3", "-c", "{script}"], "pool_script": "boot.js")")));
  EXPECT_THROW(agent::pool_command(load(R"(, "pool_run": ["node", "-r", "{script_path}"], "pool_script": "missing.js")")), Error);
}

// zygote_run (sandcell/agent/zygote.hpp): pool_run's placeholders and "{library}"; only for a
// pooled skill.
TEST_F(PoolSkill, ZygoteRunExpandsTheLibraryToo) {
  std::ofstream(dir / "probe/boot.py") << "print('boot')\n";
  agent::Skill s =
      load(R"(, "pool_run": ["python3", "-c", "{script}", "{preload}"], "pool_script": "boot.py",
                          "zygote_run": ["python3", "-c", "{script}", "--zygote", "{library}", "{preload}"],
                          "preload": ["numpy"])");
  EXPECT_TRUE(agent::skill_has_zygote(s));
  EXPECT_EQ(agent::zygote_command(s, "/lib/confine.so"),
            (std::vector<std::string>{"python3", "-c", "print('boot')\n", "--zygote",
                                      "/lib/confine.so", "numpy"}));
  agent::Skill plain =
      load(R"(, "pool_run": ["python3", "-c", "{script}"], "pool_script": "boot.py")");
  EXPECT_FALSE(agent::skill_has_zygote(plain));
  EXPECT_THROW(agent::zygote_command(plain, "/lib/confine.so"), Error);
  agent::Skill unpooled = load(R"(, "zygote_run": ["python3"])");
  EXPECT_FALSE(agent::skill_has_zygote(unpooled));
  EXPECT_THROW(agent::zygote_command(unpooled, "/lib/confine.so"), Error);
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

// "env": NAME=VALUE over the image's; "{cpus}" is the CPU limit rounded up (at least 1), and an
// entry with it is left out of a run without a CPU limit.
TEST_F(PoolSkill, EnvExpandsTheCpuLimitAndRefusesWhatIsNotNameEqualsValue) {
  agent::Skill s = load(R"(, "env": ["OPENBLAS_NUM_THREADS={cpus}", "A=b=c", "EMPTY="])");
  EXPECT_EQ(agent::skill_env(s, 1.0),
            (std::vector<std::string>{"OPENBLAS_NUM_THREADS=1", "A=b=c", "EMPTY="}));
  EXPECT_EQ(agent::skill_env(s, 1.5),
            (std::vector<std::string>{"OPENBLAS_NUM_THREADS=2", "A=b=c", "EMPTY="}));
  EXPECT_EQ(agent::skill_env(s, 0.25),
            (std::vector<std::string>{"OPENBLAS_NUM_THREADS=1", "A=b=c", "EMPTY="}));
  EXPECT_EQ(agent::skill_env(s, std::nullopt), (std::vector<std::string>{"A=b=c", "EMPTY="}));
  EXPECT_TRUE(agent::skill_env(load(""), 2.0).empty());
  EXPECT_EQ(agent::skill_env(load(R"(, "env": ["N={cpus}x{cpus}"])"), 3.0), (std::vector<std::string>{"N=3x3"}));
  EXPECT_THROW(load(R"(, "env": ["=x"])"), Error);
  EXPECT_THROW(load(R"(, "env": ["NOVALUE"])"), Error);
  EXPECT_THROW(load(R"(, "env": ["TWO WORDS=x"])"), Error);
  EXPECT_THROW(load(R"(, "env": "A=b")"), Error);
}

// The shipped python skill is pooled, with numpy preloaded and its bootstrap readable.
TEST(PoolSkillShipped, PythonIsPooled) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(""));
  const agent::Skill& python = catalog.find("python");
  EXPECT_EQ(python.preload, (std::vector<std::string>{"numpy"}));
  std::vector<std::string> argv = agent::pool_command(python);
  ASSERT_GE(argv.size(), 4u);
  EXPECT_NE(argv[2].find("os.read(0, 1)"), std::string::npos);
  EXPECT_TRUE(agent::skill_has_zygote(python));
}

// node is pooled through --require: main.js stays node's main module, as `node /workspace/main.js`.
TEST(PoolSkillShipped, NodeIsPooledWithItsBootstrapRequiredBeforeMainJs) {
  agent::SkillCatalog catalog(agent::resolve_skills_dir(""));
  const agent::Skill& node = catalog.find("node");
  EXPECT_EQ(agent::pool_command(node),
            (std::vector<std::string>{"node", "--require", "/workspace/.sandcell/pool_boot.js", "/workspace/main.js"}));
  EXPECT_NE(agent::pool_script_text(node).find("fs.readSync(0, go, 0, 1, null)"), std::string::npos);
}

}  // namespace
}  // namespace sandcell::test
