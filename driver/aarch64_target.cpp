#include "driver/aarch64_target.h"

#include <fstream>

#include "codegen/project/emit_cpu_project.h"
#include "driver/process.h"
#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace {

constexpr const char* kPackages = "apt-get install g++-aarch64-linux-gnu qemu-user";
constexpr const char* kSysroot = "/usr/aarch64-linux-gnu";

}  // namespace

bool host_is_aarch64() {
#if defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

bool targets_aarch64(const scheduler::ArchSpec& arch) {
  return arch.target == "cpu" && arch.name != "host" && codegen::is_aarch64_isa(arch.isa);
}

bool needs_aarch64_cross(const scheduler::ArchSpec& arch) { return targets_aarch64(arch) && !host_is_aarch64(); }

void require_aarch64_cross_compiler(const scheduler::ArchSpec& arch) {
  if (!find_on_path(kAarch64CrossCompiler).empty()) return;
  throw UserError(str_cat("--arch ", arch.name, " is AArch64 (", arch.isa, "): building it here needs the cross compiler ",
                          kAarch64CrossCompiler, ", which is not on PATH (", kPackages,
                          "); or tune with --no-build to write the project only"));
}

bool is_aarch64_elf(const std::string& path) {
  // e_ident (16 bytes), e_type (2), e_machine (2, little-endian on AArch64 Linux).
  unsigned char header[20] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return false;
  constexpr int kEmAarch64 = 183;
  return header[0] == 0x7f && header[1] == 'E' && header[2] == 'L' && header[3] == 'F' &&
         header[18] + 256 * header[19] == kEmAarch64;
}

std::vector<std::string> aarch64_emulator_command(const scheduler::ArchSpec& arch) {
  const std::string qemu = find_on_path(kQemuAarch64);
  if (qemu.empty())
    throw UserError(str_cat("--arch ", arch.name, " is AArch64 (", arch.isa, "): running its main_test here needs ",
                            kQemuAarch64, ", which is not on PATH (", kPackages, ")"));
  return {qemu, "-cpu", "max", "-L", kSysroot};
}

}  // namespace tilegraph::driver
