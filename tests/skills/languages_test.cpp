// Each shipped skill: a hello world, and failing programs classified for an agent.
#include "skills_support.hpp"

namespace sandcell::test {
namespace {

using Languages = Skills;

TEST_F(Languages, Python_HelloWorld) {
  auto r = code("python", "import numpy as np\nprint('hello', np.arange(4).sum())\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "hello 6\n");
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_EQ(r.record["exit_code"], 0);
  EXPECT_TRUE(r.record["error"].is_null());
  EXPECT_EQ(r.record["report"]["isolation"]["seccomp"], "code");
}

// The recipe drops matplotlib's nspkg.pth (agent/skills/python/Dockerfile): site imports nothing
// for it at every start, and mpl_toolkits (mplot3d) still imports, as a namespace package.
TEST_F(Languages, Python_StartImportsNothingForMatplotlibAndMplot3dWorks) {
  auto r = code("python",
                "import sys\n"
                "print(sorted(m for m in ('importlib.util', 'contextlib', 'mpl_toolkits') if m in "
                "sys.modules))\n"
                "import matplotlib.pyplot as plt\n"
                "from mpl_toolkits.mplot3d import Axes3D\n"
                "print(isinstance(plt.figure().add_subplot(projection='3d'), Axes3D))\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "[]\nTrue\n");
}

// numpy's BLAS threads follow the sandbox's CPU limit (skill.json "env": {cpus}): at the default
// 1 CPU one thread, where it would start one per host CPU and spin them against the CPU quota
// (a numpy snippet took ~57 ms longer here). --cpus and the request's own env change it.
TEST_F(Languages, Python_BlasThreadsFollowTheCpuLimit) {
  const std::string probe =
      "import os, numpy\n"
      "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'), "
      "len(os.listdir('/proc/self/task')))\n";
  auto r = code("python", probe);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "1 1 1\n");
  r = code("python", probe, {"--cpus", "1.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"].get<std::string>().substr(0, 4), "2 2 ");
  r = code("python", probe, {"--env", "OPENBLAS_NUM_THREADS=7"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"].get<std::string>().substr(0, 4), "7 1 ");
}

TEST_F(Languages, Python_SyntaxErrorHasFileAndLine) {
  auto r = code("py", "x = 1\nprint(x +)\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(error_class(r), "syntax_error") << r.out;
  EXPECT_EQ(r.record["error"]["file"], "/workspace/main.py");
  EXPECT_EQ(r.record["error"]["line"], 2);
}

TEST_F(Languages, Python_MissingModuleIsNamed) {
  auto r = code("python3", "import json\nimport no_such_module_xyz\n");
  EXPECT_EQ(error_class(r), "missing_module") << r.out;
  EXPECT_EQ(r.record["error"]["module"], "no_such_module_xyz");
}

TEST_F(Languages, Python_RuntimeExceptionHasLastFrame) {
  auto r = code("python", "def f(d):\n    return 1 / d\n\nf(0)\n");
  EXPECT_EQ(error_class(r), "runtime_exception") << r.out;
  EXPECT_EQ(r.record["error"]["exception"], "ZeroDivisionError");
  EXPECT_EQ(r.record["error"]["line"], 2);
  EXPECT_EQ(r.record["error"]["frame"], "/workspace/main.py:2 in f");
}

TEST_F(Languages, Node_HelloWorld) {
  auto r = code("js", "console.log('hello from', process.version.split('.')[0])\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.record["stdout"], "hello from v18\n");
}

TEST_F(Languages, Node_ErrorsClassified) {
  auto syntax = code("node", "let x = 1;\nconsole.log(x +);\n");
  EXPECT_EQ(error_class(syntax), "syntax_error") << syntax.out;
  EXPECT_EQ(syntax.record["error"]["line"], 2);
  auto missing = code("javascript", "require('left-pad-not-installed')\n");
  EXPECT_EQ(error_class(missing), "missing_module") << missing.out;
  EXPECT_EQ(missing.record["error"]["module"], "left-pad-not-installed");
  auto thrown = code("node", "function g(o) {\n  return o.x.y;\n}\ng({});\n");
  EXPECT_EQ(error_class(thrown), "runtime_exception") << thrown.out;
  EXPECT_EQ(thrown.record["error"]["exception"], "TypeError");
  EXPECT_EQ(thrown.record["error"]["line"], 2);
}

TEST_F(Languages, Bash_HelloWorldAndErrors) {
  auto hello = code("sh", "echo hello $((6*7))\n");
  ASSERT_EQ(hello.exit_code, 0) << hello.err << hello.out;
  EXPECT_EQ(hello.record["stdout"], "hello 42\n");
  auto syntax = code("bash", "echo ok\nif then fi (\n");
  EXPECT_EQ(error_class(syntax), "syntax_error") << syntax.out;
  EXPECT_EQ(syntax.record["error"]["line"], 2);
  auto missing = code("bash", "set -e\nno_such_command_xyz --flag\n");
  EXPECT_EQ(error_class(missing), "command_not_found") << missing.out;
  EXPECT_EQ(missing.record["error"]["module"], "no_such_command_xyz");
}

TEST_F(Languages, C_HelloWorldCompileErrorAndCrash) {
  auto hello = code("c", "#include <stdio.h>\n#include <math.h>\nint main(void) { printf(\"hello %.0f\\n\", sqrt(49.0)); }\n");
  ASSERT_EQ(hello.exit_code, 0) << hello.err << hello.out;
  EXPECT_EQ(hello.record["stdout"], "hello 7\n");
  EXPECT_EQ(hello.record["phases"].size(), 2u);
  auto broken = code("c", "int main(void) {\n  return undefined_name;\n}\n");
  EXPECT_EQ(broken.record["phase"], "compile");
  EXPECT_EQ(error_class(broken), "compile_error") << broken.out;
  EXPECT_EQ(broken.record["error"]["file"], "/workspace/main.c");
  EXPECT_EQ(broken.record["error"]["line"], 2);
  auto header = code("c", "#include <no_such_header.h>\nint main(void) { return 0; }\n");
  EXPECT_EQ(error_class(header), "missing_module") << header.out;
  EXPECT_EQ(header.record["error"]["module"], "no_such_header.h");
  auto crash = code("c", "int main(void) { volatile int *p = 0; return *p; }\n");
  EXPECT_EQ(crash.record["status"], "signaled");
  EXPECT_EQ(error_class(crash), "signaled") << crash.out;
  EXPECT_EQ(crash.exit_code, 128 + 11);
}

TEST_F(Languages, Cpp_HelloWorldCompileErrorAndException) {
  auto hello = code("c++", "#include <iostream>\n#include <vector>\nint main() { std::vector<int> v{1,2,3}; "
                           "std::cout << \"hello \" << v.size() << std::endl; }\n");
  ASSERT_EQ(hello.exit_code, 0) << hello.err << hello.out;
  EXPECT_EQ(hello.record["stdout"], "hello 3\n");
  auto broken = code("cpp", "#include <string>\nint main() {\n  std::string s = 42 + ;\n}\n");
  EXPECT_EQ(error_class(broken), "compile_error") << broken.out;
  EXPECT_EQ(broken.record["error"]["line"], 3);
  auto thrown = code("cpp", "#include <stdexcept>\nint main() { throw std::runtime_error(\"boom\"); }\n");
  EXPECT_EQ(error_class(thrown), "runtime_exception") << thrown.out;
  EXPECT_EQ(thrown.record["error"]["exception"], "std::runtime_error");
  EXPECT_EQ(thrown.record["error"]["message"], "boom");
}

TEST_F(Languages, Limits_TimeoutMemoryAndOutputAreClassified) {
  auto slow = code("python", "while True:\n    pass\n", {"--timeout", "1"});
  EXPECT_EQ(slow.record["status"], "timeout_wall");
  EXPECT_EQ(error_class(slow), "timeout") << slow.out;
  auto hungry = code("python", "x = bytearray(400 * 1024 * 1024)\nx[::4096] = b'x' * len(x[::4096])\n", {"--memory", "128m"});
  EXPECT_EQ(hungry.record["status"], "oom") << hungry.out;
  EXPECT_EQ(error_class(hungry), "memory_limit");
  auto chatty = code("bash", "yes hello\n", {"--output-limit", "64k"});
  EXPECT_EQ(chatty.record["status"], "output_limit");
  EXPECT_EQ(error_class(chatty), "output_limit");
  EXPECT_LE(chatty.record["stdout"].get<std::string>().size(), 64u * 1024);
}

}  // namespace
}  // namespace sandcell::test
