// cli/sandcell-images.order puts the functions an image run and `code` call first in
// sandcell-images' text (lld, cli/CMakeLists.txt), as cli/sandcell.order does for sandcell
// (LeanBinary.ARunMapsLittleOfTheProgramsText). A page fault maps the 64 KiB around it: with
// those functions spread over the program, an image run had mapped 86% of its text pages by the
// time its program ran; with them together ~30%. Above 60%, the order no longer matches what a
// run calls (or was not applied): scripts/function-order.sh rewrites it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "sandcell_cli.hpp"
#include "skills_support.hpp"
#include "text_pages.hpp"

namespace sandcell::test {
namespace {

TEST(TextOrder, AnImageRunMapsLittleOfSandcellImagesText) {
#if !SANDCELL_IMAGES_TEXT_ORDERED
  GTEST_SKIP() << "sandcell-images is linked without its function order (no lld, or sanitizers)";
#endif
  const std::string images =
      (std::filesystem::path(sandcell_binary()).parent_path() / "sandcell-images").string();
  const pid_t supervisor = spawn_program(
      {images, "--root", test_store(), "run", "sandcell/skill-bash", "/bin/sleep", "1"});
  ASSERT_GT(supervisor, 0);
  const pid_t program = wait_for_sandbox_program(supervisor);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the supervisor's part of it
  const TextPages pages = text_pages(supervisor, images);
  int status = 0;
  ASSERT_EQ(waitpid(supervisor, &status, 0), supervisor);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(program, 0) << "the program never started";
  ASSERT_GT(pages.total, 100u) << "no executable mapping of " << images;
  EXPECT_LT(pages.present * 100, pages.total * 60)
      << pages.present << " of " << pages.total << " text pages mapped";
}

}  // namespace
}  // namespace sandcell::test
