#include "compiler/ir/replace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/ir/error.h"

namespace tilegraph {

void replace_file(const std::filesystem::path& path, std::string_view contents) {
  auto fail = [&](const std::string& what) {
    throw UserError(str_cat("cannot write '", path.string(), "': ", what, ": ", std::strerror(errno)));
  };
  // mkstemp creates the name exclusively (O_EXCL): it never opens an
  // existing file or a link.
  std::string temp = path.string() + ".tmp-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) fail("creating a temporary file");
  bool written = ::fchmod(fd, 0644) == 0;
  for (size_t done = 0; written && done < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) written = false;
  // rename replaces whatever `path` is (a file, a symlink), not its target.
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    errno = err;
    fail(written ? "renaming the temporary file" : "writing (disk full?)");
  }
}

}  // namespace tilegraph
