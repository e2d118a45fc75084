// Files back from the sandbox: figures, --put/--get, and never through a planted symlink.
#include <filesystem>
#include <fstream>

#include "sandcell/agent/code_result.hpp"
#include "skills_support.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
using Artifacts = Skills;

TEST_F(Artifacts, Python_ShownFigureComesBackAsPng) {
  auto r = code("python",
                "import matplotlib.pyplot as plt\n"
                "plt.plot([1, 2, 3], [1, 4, 9])\n"
                "plt.title('squares')\n"
                "plt.show()\n"
                "print('plotted')\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_EQ(r.record["artifacts"].size(), 1u) << r.out;
  const auto& a = r.record["artifacts"][0];
  EXPECT_EQ(a["path"], "/workspace/out/figure-1.png");
  EXPECT_EQ(a["mime"], "image/png");
  std::string png = agent::base64_decode(a["base64"].get<std::string>(), "artifact");
  EXPECT_EQ(png.size(), a["size"].get<uint64_t>());
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST_F(Artifacts, PutAndGetMoveFilesBothWays) {
  fs::path in = dir_.path / "numbers.csv";
  std::ofstream(in) << "a,b\n1,2\n3,4\n";
  fs::path back = dir_.path / "sums.csv";
  auto r = code("python",
                "import pandas as pd\n"
                "df = pd.read_csv('/workspace/data/numbers.csv')\n"
                "df.sum().to_csv('/workspace/sums.csv', header=False)\n",
                {"--put", in.string() + ":data/numbers.csv", "--get", "sums.csv:" + back.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(read_text(back), "a,4\nb,6\n");
  ASSERT_EQ(r.record["files"].size(), 1u);
  EXPECT_EQ(agent::base64_decode(r.record["files"][0]["base64"].get<std::string>(), "file"), "a,4\nb,6\n");
}

TEST_F(Artifacts, PlantedSymlinksAreNeverFollowed) {
  // The code points artifacts and a --get path at host files; sandcell (root on the host) must
  // neither read them nor write through them in the next call of the session.
  fs::path secret = dir_.path / "host-secret";
  std::ofstream(secret) << "host only\n";
  auto plant = code("bash",
                    "ln -s " + secret.string() + " /workspace/out/leak.txt\n"
                    "ln -s " + secret.string() + " /workspace/main.sh.next\n"
                    "ln -s /etc/shadow /workspace/shadow\n"
                    "mkfifo /workspace/out/fifo\n",
                    {"--session", "plant", "--get", "shadow:" + (dir_.path / "got").string()});
  ASSERT_EQ(plant.exit_code, 0) << plant.err << plant.out;
  EXPECT_TRUE(plant.record["artifacts"].empty()) << plant.out;
  ASSERT_EQ(plant.record["files"].size(), 1u);
  EXPECT_TRUE(plant.record["files"][0]["base64"].is_null());
  EXPECT_FALSE(fs::exists(dir_.path / "got"));
  // Now main.sh itself is a symlink to the host file: the next call's code replaces the link
  // (unlinked and made anew, never written through), runs, and the host file is untouched.
  auto swap = code("bash", "rm /workspace/main.sh && ln -s " + secret.string() + " /workspace/main.sh\n", {"--session", "plant"});
  ASSERT_EQ(swap.exit_code, 0) << swap.err;
  auto next = code("bash", "echo overwritten\n", {"--session", "plant"});
  EXPECT_EQ(next.exit_code, 0) << next.err << next.out;
  EXPECT_EQ(next.record.value("stdout", ""), "overwritten\n") << next.out;
  EXPECT_EQ(read_text(secret), "host only\n");
}

TEST_F(Artifacts, ManyAndLargeFilesAreBounded) {
  auto r = code("bash",
                "for i in $(seq 1 200); do echo $i > /workspace/out/f$i.txt; done\n"
                "head -c 3000000 /dev/zero > /workspace/out/big.bin\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(r.record["artifacts"].size(), 64u);
  auto big = code("bash", "head -c 3000000 /dev/zero > /workspace/out/big.bin\n");
  ASSERT_EQ(big.record["artifacts"].size(), 1u);
  EXPECT_EQ(big.record["artifacts"][0]["size"], 3000000);
  EXPECT_TRUE(big.record["artifacts"][0]["base64"].is_null());
}

}  // namespace
}  // namespace sandcell::test
