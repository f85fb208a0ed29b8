// AArch64 CPU targets (arch specs whose isa is armv8* / armv9*) on a host that
// is not AArch64: `tune` cross-compiles the project with Debian's GNU cross
// toolchain (the project's aarch64-toolchain.cmake), `run` executes its
// main_test under qemu-user (DESIGN.md, "Targets"). On an AArch64 host both
// are native.
#pragma once
#include <string>
#include <vector>

#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

// The cross compiler and the emulator, as the toolchain file names them.
inline constexpr const char* kAarch64CrossCompiler = "aarch64-linux-gnu-g++";
inline constexpr const char* kQemuAarch64 = "qemu-aarch64";

// This tilegraph runs on AArch64.
bool host_is_aarch64();

// The arch's project targets AArch64 (a named arch spec, not `host`).
bool targets_aarch64(const scheduler::ArchSpec& arch);

// targets_aarch64 and the host is not AArch64: build with the cross toolchain,
// run under qemu.
bool needs_aarch64_cross(const scheduler::ArchSpec& arch);

// Throws a UserError naming aarch64-linux-gnu-g++ (and the Debian packages)
// when it is not on PATH.
void require_aarch64_cross_compiler(const scheduler::ArchSpec& arch);

// `path` is an AArch64 ELF executable or library (e_machine EM_AARCH64).
bool is_aarch64_elf(const std::string& path);

// The command prefix that runs an AArch64 executable here:
// {"/usr/bin/qemu-aarch64", "-cpu", "max", "-L", "/usr/aarch64-linux-gnu"}.
// Throws a UserError naming qemu-aarch64 when it is not on PATH.
std::vector<std::string> aarch64_emulator_command(const scheduler::ArchSpec& arch);

}  // namespace tilegraph::driver
