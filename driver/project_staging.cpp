#include "driver/project_staging.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

// PREFIX/tilegraph_rt/.<arch><suffix>
fs::path sibling(const fs::path& project, const std::string& suffix) {
  return project.parent_path() / ("." + project.filename().string() + suffix);
}

// Opens (creating) the lock file without following a symlink in its place.
int open_lock(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP) {  // a symlink: replace it by our own file
    ::unlink(path.c_str());
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  if (fd < 0) throw UserError(str_cat("cannot create the lock file '", path.string(), "': ", std::strerror(errno)));
  return fd;
}

// Copies the folders and regular files under `from` into `to` (which
// exists), with their timestamps; anything else (symlinks above all) is
// left behind.
void copy_tree(const fs::path& from, const fs::path& to) {
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    const fs::file_status status = e.symlink_status();
    const fs::path target = to / e.path().filename();
    if (fs::is_directory(status)) {
      fs::create_directory(target);
      copy_tree(e.path(), target);
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(e.path(), target);
      fs::last_write_time(target, fs::last_write_time(e.path()));
    }
  }
}

}  // namespace

ProjectStaging::ProjectStaging(const std::string& project_dir) {
  const fs::path project = fs::path(project_dir).lexically_normal();
  project_ = project.string();
  const fs::path staging = sibling(project, ".next");
  staging_ = staging.string();
  std::error_code ec;
  fs::create_directories(project.parent_path(), ec);
  if (ec) throw UserError(str_cat("cannot create '", project.parent_path().string(), "': ", ec.message()));
  const fs::path lock = sibling(project, ".lock");
  lock_fd_ = open_lock(lock);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    throw UserError(str_cat("another `tilegraph tune` is writing '", project_, "' (it holds '", lock.string(),
                            "'); wait for it to finish"));
  try {
    fs::remove_all(staging);  // a failed attempt's leftovers (a symlink there is removed, not followed)
    fs::create_directory(staging);
    if (fs::is_directory(project)) copy_tree(project, staging);
  } catch (const fs::filesystem_error& e) {
    throw UserError(str_cat("cannot prepare '", staging_, "' from '", project_, "': ", e.code().message()));
  }
}

ProjectStaging::~ProjectStaging() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

void ProjectStaging::commit() {
  swap_into_place();
  // The project's build folder was configured in the staging folder, and CMake
  // keeps that absolute path in it: a link by that name to the project lets a
  // rebuild in place (`cmake --build <arch>/build`) find its sources. Relative,
  // so it stays right when PREFIX moves. Best effort: tune's own builds never
  // need it, and the next tune replaces the link (not following it).
  std::error_code ec;
  fs::create_directory_symlink(fs::path(project_).filename(), staging_, ec);
}

void ProjectStaging::swap_into_place() {
  // One atomic exchange where the file system offers it: at every instant
  // the project folder is either the old project or the new one.
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(project_, ec))) {
    if (::rename(staging_.c_str(), project_.c_str()) != 0)
      throw UserError(str_cat("cannot move '", staging_, "' to '", project_, "': ", std::strerror(errno)));
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, project_.c_str(), RENAME_EXCHANGE) != 0) {
    // No RENAME_EXCHANGE here: move the old project aside first.
    const std::string old = sibling(project_, ".old").string();
    fs::remove_all(old, ec);
    if (::rename(project_.c_str(), old.c_str()) != 0 || ::rename(staging_.c_str(), project_.c_str()) != 0)
      throw UserError(str_cat("cannot move '", staging_, "' to '", project_, "': ", std::strerror(errno)));
    fs::remove_all(old, ec);
    return;
  }
  fs::remove_all(staging_, ec);  // the old project, now
}

}  // namespace tilegraph::driver
