// tune --compiler-launcher (driver/compiler_launcher.h, driver/cmake_build.h):
// exactly one program is accepted, and a project's compiles run through it.
#include "driver/compiler_launcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/error.h"
#include "driver/cmake_build.h"

namespace tilegraph::driver {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string& value) {
  try {
    resolve_compiler_launcher(value);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tg_launcher_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(CompilerLauncher, NoneIsNothing) { EXPECT_EQ(resolve_compiler_launcher(""), ""); }

TEST(CompilerLauncher, OnlyOneProgramWithoutArgumentsOrShellSyntax) {
  for (const std::string value : {"ccache -d", "sccache;rm", "$(sccache)", "a|b", "`x`", "~/bin/x"})
    EXPECT_EQ(error_of(value), "--compiler-launcher '" + value +
                                   "': give one program, by name or path (letters, digits, / . _ + -), without "
                                   "arguments or shell syntax")
        << value;
  EXPECT_EQ(error_of("x\ny").find('\n'), std::string::npos);  // errors stay one line
  EXPECT_NE(error_of("x\ny"), "");
}

TEST(CompilerLauncher, NameIsFoundOnPathAndMadeAbsolute) {
  const std::string sh = resolve_compiler_launcher("sh");
  EXPECT_TRUE(fs::path(sh).is_absolute()) << sh;
  EXPECT_EQ(fs::path(sh).filename(), "sh");
  EXPECT_EQ(error_of("no-such-launcher-xyz"), "--compiler-launcher 'no-such-launcher-xyz': no such program on PATH");
}

TEST(CompilerLauncher, PathMustBeAnExecutableFile) {
  const fs::path dir = fresh_dir("path");
  write(dir / "plain", "not a program\n");
  EXPECT_EQ(error_of((dir / "plain").string()),
            "--compiler-launcher '" + (dir / "plain").string() + "': not an executable file");
  EXPECT_EQ(error_of(dir.string()), "--compiler-launcher '" + dir.string() + "': not an executable file");
  fs::remove_all(dir);
}

TEST(CompilerLauncher, CountsComeOnlyFromSccache) {
  EXPECT_FALSE(read_launcher_counts("").has_value());
  EXPECT_FALSE(read_launcher_counts(resolve_compiler_launcher("sh")).has_value());
}

// A launcher that logs each command it is given, then runs it: the
// project's compile of hello.cpp must pass through it.
TEST(CompilerLauncher, ProjectCompilesRunThroughIt) {
  const fs::path dir = fresh_dir("build");
  const fs::path log = dir / "launched.log";
  write(dir / "launcher", "#!/bin/sh\necho \"$@\" >> " + log.string() + "\nexec \"$@\"\n");
  ::chmod((dir / "launcher").c_str(), 0755);
  const fs::path project = dir / "project";
  fs::create_directories(project);
  write(project / "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.18)\nproject(hello CXX)\nadd_executable(hello hello.cpp)\n");
  write(project / "hello.cpp", "int main() { return 0; }\n");
  build_project(project.string(), 1, "", resolve_compiler_launcher((dir / "launcher").string()));
  EXPECT_TRUE(fs::exists(project / "build" / "hello"));
  std::ifstream in(log);
  std::stringstream launched;
  launched << in.rdbuf();
  EXPECT_NE(launched.str().find("hello.cpp"), std::string::npos) << launched.str();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tilegraph::driver
