// driver/process: programs run from an argument vector, never through a
// shell; output files and every other file tilegraph writes replace a
// symlink instead of writing through it.
#include "driver/process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "compiler/ir/error.h"
#include "compiler/ir/replace_file.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
using driver::ProcessOptions;
using driver::run_process;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Process : public ::testing::Test {
 protected:
  void SetUp() override {
    // A folder whose name a shell would execute.
    dir_ = fs::temp_directory_path() / ("tg_process_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name()) /
           "a'b \"c\" $(touch PWNED) `touch PWNED2` d\ne";
    fs::remove_all(dir_.parent_path());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }
  fs::path dir_;
};

TEST_F(Process, ArgumentsReachTheProgramVerbatim) {
  ProcessOptions capture;
  capture.capture = true;
  const std::string arg = (dir_ / "x;y|z&&w>v").string();
  const driver::ProcessResult r = run_process({"printf", "[%s]", arg, "$HOME"}, capture);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output, "[" + arg + "][$HOME]");
  EXPECT_FALSE(fs::exists("PWNED") || fs::exists(dir_ / "PWNED") || fs::exists("PWNED2"));
  EXPECT_FALSE(fs::exists(dir_ / "x;y|z&&w>v"));
}

TEST_F(Process, RedirectsToFilesAndReportsTheExitStatus) {
  ProcessOptions to_files;
  to_files.stdout_path = (dir_ / "out.txt").string();
  to_files.stderr_path = (dir_ / "err.txt").string();
  driver::ProcessResult r =
      run_process({"sh", "-c", "echo out; echo err >&2; exit 3", "ignored"}, to_files);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit status 3");
  EXPECT_EQ(read(dir_ / "out.txt"), "out\n");
  EXPECT_EQ(read(dir_ / "err.txt"), "err\n");

  // One file for both streams, appended.
  ProcessOptions both;
  both.stdout_path = both.stderr_path = (dir_ / "out.txt").string();
  both.append = true;
  r = run_process({"sh", "-c", "echo two; echo three >&2"}, both);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(read(dir_ / "out.txt"), "out\ntwo\nthree\n");
}

TEST_F(Process, EnvironmentAdditionsReachTheChild) {
  ProcessOptions o;
  o.capture = true;
  o.extra_env["TG_PROCESS_TEST"] = "a b'c";
  EXPECT_EQ(run_process({"printenv", "TG_PROCESS_TEST"}, o).output, "a b'c\n");
}

TEST_F(Process, TimeoutKillsTheWholeProcessGroup) {
  ProcessOptions o;
  o.timeout_seconds = 1;
  const fs::path marker = dir_ / "grandchild_survived";
  const auto start = std::chrono::steady_clock::now();
  // The grandchild would write the marker after 3 s, unless its group is killed.
  const driver::ProcessResult r =
      run_process({"sh", "-c", "(sleep 3; touch \"$0\") & sleep 30", marker.string()}, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.describe(1), "timed out after 1 s");
  EXPECT_LT(seconds, 20);  // generous: only that the 30 s sleep did not run out
  ::sleep(4);
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(Process, MissingProgramIsAUserError) {
  EXPECT_THROW(run_process({"tilegraph-no-such-program"}), UserError);
  EXPECT_EQ(driver::find_on_path("tilegraph-no-such-program"), "");
  EXPECT_EQ(fs::path(driver::find_on_path("sh")).filename(), "sh");
}

TEST_F(Process, OutputFilesReplaceASymlink) {
  const fs::path outside = dir_ / "outside.txt";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, dir_ / "log.txt");
  ProcessOptions o;
  o.stdout_path = (dir_ / "log.txt").string();
  ASSERT_TRUE(run_process({"echo", "new"}, o).ok());
  EXPECT_EQ(read(outside), "keep");
  EXPECT_FALSE(fs::is_symlink(dir_ / "log.txt"));
  EXPECT_EQ(read(dir_ / "log.txt"), "new\n");
}

TEST_F(Process, ReplaceFileReplacesASymlinkAndLeavesNoTemporary) {
  const fs::path outside = dir_ / "outside.txt";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, dir_ / "model.cpp");
  replace_file(dir_ / "model.cpp", "generated");
  EXPECT_EQ(read(outside), "keep");
  EXPECT_FALSE(fs::is_symlink(dir_ / "model.cpp"));
  EXPECT_EQ(read(dir_ / "model.cpp"), "generated");
  EXPECT_EQ(fs::status(dir_ / "model.cpp").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2);  // outside.txt and model.cpp
  EXPECT_THROW(replace_file(dir_ / "no_such_dir" / "f", "x"), UserError);
}

}  // namespace
}  // namespace tilegraph
