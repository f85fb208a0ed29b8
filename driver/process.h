// Running other programs (cmake, nvcc, the profiling harness) without a
// shell: an argument vector goes to posix_spawn as it is, so no character of
// a path (quotes, spaces, `$`, backticks, newlines) is ever interpreted
// (DESIGN.md, "Model files are untrusted": no command runs through a shell).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tilegraph::driver {

struct ProcessOptions {
  // Where stdout and stderr go: "" inherits tilegraph's (or captures them,
  // below); a path is created (or truncated, unless `append`), never opened
  // through a symlink. stderr_path == stdout_path: one file, both streams.
  std::string stdout_path;
  std::string stderr_path;
  bool append = false;
  // The streams not sent to a file are read into ProcessResult::output.
  bool capture = false;
  // > 0: the program runs in a process group of its own, which is killed
  // (SIGKILL) when it has not exited after this many seconds. Without a
  // timeout it stays in tilegraph's group, so Ctrl-C stops it too.
  int timeout_seconds = 0;
  std::map<std::string, std::string> extra_env;  // set on top of tilegraph's environment
};

struct ProcessResult {
  int exit_code = -1;      // when it exited by itself
  int signal = 0;          // the signal that ended it, if one did
  bool timed_out = false;  // killed after ProcessOptions::timeout_seconds
  std::string output;      // the captured streams
  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
  // "exit status 2", "killed by signal 11", "timed out after 600 s".
  std::string describe(int timeout_seconds = 0) const;
};

// Runs argv[0] (a path, or a name looked up on PATH) with argv and waits for
// it. Throws UserError when it cannot be started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The executable `tool` resolves to on PATH, or "" (no shell's `command -v`).
std::string find_on_path(const std::string& tool);

}  // namespace tilegraph::driver
