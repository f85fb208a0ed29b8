// A project is replaced whole or not at all. `tune` writes and builds into a
// staging folder next to the project, PREFIX/tilegraph_rt/.<arch>.next, and
// swaps it into place (one rename) only when everything succeeded: an
// interrupted or failed tune leaves the previous project complete and
// runnable (and the failed attempt in .<arch>.next, for its build.log).
//
// The staging folder starts as a copy of the current project, build folder
// and caches included, with timestamps kept, so a re-tune rebuilds only the
// files whose contents changed. Its name never changes: CMake's build
// folder remembers the path it was configured in, and it is always
// configured in .<arch>.next. After a tune, .<arch>.next is a link to the
// project, so its build folder also rebuilds in place (`cmake --build
// PREFIX/tilegraph_rt/<arch>/build`); after a failed tune it is the failed
// attempt, and that build folder builds the attempt.
//
// The copy takes regular files and folders only: a symlink planted in a
// project is not carried over, so nothing tune writes can land outside it.
// A lock file, PREFIX/tilegraph_rt/.<arch>.lock, keeps two tunes of one
// project from sharing the staging folder.
#pragma once
#include <string>

namespace tilegraph::driver {

class ProjectStaging {
 public:
  // Locks the project (UserError when another tune holds it) and prepares
  // the staging folder for `project_dir` (PREFIX/tilegraph_rt/<arch>).
  explicit ProjectStaging(const std::string& project_dir);
  ~ProjectStaging();
  ProjectStaging(const ProjectStaging&) = delete;
  ProjectStaging& operator=(const ProjectStaging&) = delete;

  // Where to write and build the new project.
  const std::string& dir() const { return staging_; }
  // Moves the staging folder into place (the old project is removed) and
  // leaves the link to it in the staging folder's place.
  void commit();

 private:
  void swap_into_place();

  std::string project_, staging_;
  int lock_fd_ = -1;
};

}  // namespace tilegraph::driver
