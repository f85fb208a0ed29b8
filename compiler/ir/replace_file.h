// Writing a file the way every tilegraph output is written: into a fresh
// temporary file in the same folder, then renamed over the target. Readers
// see the old file or the new one, never half of one; and a symlink at the
// target is replaced by the file, never followed (a link planted in a project
// folder cannot make tilegraph write outside it).
#pragma once
#include <filesystem>
#include <string_view>

namespace tilegraph {

// Creates or replaces `path` with `contents`; throws UserError naming the
// path when it cannot.
void replace_file(const std::filesystem::path& path, std::string_view contents);

}  // namespace tilegraph
