#include "driver/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "compiler/ir/error.h"

extern char** environ;

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Closes its descriptor on every path out of run_process.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// An output file for the child; a symlink in its place is replaced, never
// followed (the file lands where the caller named it, not elsewhere).
int open_output(const std::string& path, bool append) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
                        0644);
  if (fd < 0) throw UserError(str_cat("cannot write '", path, "': ", std::strerror(errno)));
  return fd;
}

// NAME=VALUE strings: tilegraph's environment with `extra` set over it.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    if (!extra.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Waits for pid (reading `pipe` into output meanwhile, if open); kills its
// process group at the deadline. Returns the wait status.
int wait_for(pid_t pid, Fd& pipe, std::string& output, int timeout_seconds, bool& timed_out) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  auto expired = [&] { return timeout_seconds > 0 && Clock::now() >= deadline; };
  int status = 0;
  while (true) {
    if (expired()) {
      ::kill(-pid, SIGKILL);  // the group: whatever it started goes too
      timed_out = true;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    if (pipe.fd >= 0) {
      struct pollfd p = {pipe.fd, POLLIN, 0};
      if (::poll(&p, 1, timeout_seconds > 0 ? 100 : -1) > 0) {
        char buf[4096];
        const ssize_t n = ::read(pipe.fd, buf, sizeof buf);
        if (n > 0) output.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR) pipe.reset();  // EOF: the child closed its end
      }
      continue;
    }
    const pid_t done = ::waitpid(pid, &status, timeout_seconds > 0 ? WNOHANG : 0);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) throw InternalError(str_cat("waitpid: ", std::strerror(errno)));
    if (timeout_seconds > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::string ProcessResult::describe(int timeout) const {
  if (timed_out) return str_cat("timed out after ", timeout, " s");
  if (signal != 0) return str_cat("killed by signal ", signal, " (", strsignal(signal), ")");
  return str_cat("exit status ", exit_code);
}

std::string find_on_path(const std::string& tool) {
  if (tool.empty()) return "";
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (tool.find('/') != std::string::npos) return executable(tool) ? tool : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / tool;
    if (executable(candidate)) return candidate.string();
  }
  return "";
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  TG_CHECK(!argv.empty(), "run_process: no program");
  const std::string program = find_on_path(argv[0]);
  if (program.empty()) throw UserError(str_cat("cannot run '", argv[0], "': not found on PATH"));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  struct Cleanup {
    posix_spawn_file_actions_t* a;
    posix_spawnattr_t* t;
    ~Cleanup() {
      posix_spawn_file_actions_destroy(a);
      posix_spawnattr_destroy(t);
    }
  } cleanup{&actions, &attr};

  Fd out_file, err_file, pipe_read, pipe_write;
  if (!options.stdout_path.empty()) out_file.fd = open_output(options.stdout_path, options.append);
  if (!options.stderr_path.empty() && options.stderr_path != options.stdout_path)
    err_file.fd = open_output(options.stderr_path, options.append);
  const int stderr_file = options.stderr_path.empty() ? -1
                          : options.stderr_path == options.stdout_path ? out_file.fd
                                                                       : err_file.fd;
  if (options.capture && (out_file.fd < 0 || stderr_file < 0)) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw InternalError(str_cat("pipe: ", std::strerror(errno)));
    pipe_read.fd = fds[0];
    pipe_write.fd = fds[1];
  }
  const int to_stdout = out_file.fd >= 0 ? out_file.fd : pipe_write.fd;
  const int to_stderr = stderr_file >= 0 ? stderr_file : pipe_write.fd;
  if (to_stdout >= 0) posix_spawn_file_actions_adddup2(&actions, to_stdout, STDOUT_FILENO);
  if (to_stderr >= 0) posix_spawn_file_actions_adddup2(&actions, to_stderr, STDERR_FILENO);
  if (options.timeout_seconds > 0) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);  // its own group, killed as one at the deadline
  }

  std::vector<std::string> args = argv, env = environment_with(options.extra_env);
  std::vector<char*> c_args = c_strings(args), c_env = c_strings(env);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, c_args.data(), c_env.data());
  if (rc != 0) throw UserError(str_cat("cannot run '", program, "': ", std::strerror(rc)));
  pipe_write.reset();  // the child holds the write end now: EOF when it exits

  ProcessResult result;
  const int status = wait_for(pid, pipe_read, result.output, options.timeout_seconds, result.timed_out);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace tilegraph::driver
