#include "driver/saved_host_spec.h"

#include <cstdlib>
#include <iostream>
#include <system_error>

#include "compiler/ir/error.h"
#include "compiler/ir/replace_file.h"
#include "driver/memory_budget.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEnvironmentVariable = "TILEGRAPH_HOST_SPEC";
constexpr const char* kOff = "builtin";

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Loads and checks PATH; why it cannot be used, naming the file, goes to WHY.
std::optional<scheduler::ArchSpec> try_load(const fs::path& path, std::string& why) {
  scheduler::ArchSpec spec;
  try {
    spec = scheduler::arch_from_file(path.string(), path.string());
  } catch (const UserError& e) {
    why = e.what();
    return std::nullopt;
  }
  const std::string mismatch = host_spec_mismatch(spec, scheduler::host_arch());
  if (mismatch.empty()) return spec;
  why = path.string() + ": " + mismatch;
  return std::nullopt;
}

}  // namespace

fs::path saved_host_spec_path() {
  const std::string chosen = environment(kEnvironmentVariable);
  if (chosen == kOff) return {};
  if (!chosen.empty()) return chosen;
  const std::string config = environment("XDG_CONFIG_HOME");
  // The XDG base directory spec ignores a relative XDG_CONFIG_HOME.
  if (!config.empty() && fs::path(config).is_absolute()) return fs::path(config) / "tilegraph" / "host.json";
  const std::string home = environment("HOME");
  if (home.empty() || !fs::path(home).is_absolute()) return {};
  return fs::path(home) / ".config" / "tilegraph" / "host.json";
}

std::string host_spec_mismatch(const scheduler::ArchSpec& saved, const scheduler::ArchSpec& here) {
  if (saved.name != "host" || saved.target != "cpu")
    return str_cat("it describes ", saved.name, " (", saved.target, "), not the host CPU");
  if (saved.isa != here.isa) return str_cat("its ISA is ", saved.isa, ", this machine's ", here.isa);
  if (saved.vector_bytes != here.vector_bytes)
    return str_cat("its vectors are ", saved.vector_bytes, " bytes, this machine's ", here.vector_bytes);
  const struct {
    const char* name;
    int64_t saved, here;
  } caches[] = {{"l1", saved.l1_bytes, here.l1_bytes},
                {"l2", saved.l2_bytes, here.l2_bytes},
                {"l3", saved.l3_bytes, here.l3_bytes}};
  for (const auto& c : caches)
    if (c.saved != c.here)
      return str_cat("its ", c.name, " is ", format_bytes(c.saved), ", this machine's ", format_bytes(c.here));
  if (saved.cores > here.cores)
    return str_cat("it was calibrated on ", saved.cores, " cores, this machine has ", here.cores);
  return "";
}

std::optional<SavedHostSpec> load_saved_host_spec() {
  const fs::path path = saved_host_spec_path();
  if (path.empty()) return std::nullopt;
  const bool explicit_choice = !environment(kEnvironmentVariable).empty();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (explicit_choice)
      throw UserError(str_cat(kEnvironmentVariable, "='", path.string(), "': no such file (",
                              kEnvironmentVariable, "=", kOff, " uses the built-in host spec)"));
    return std::nullopt;
  }
  std::string why;
  std::optional<scheduler::ArchSpec> spec = try_load(path, why);
  if (spec) return SavedHostSpec{path, *spec};
  if (explicit_choice) throw UserError(str_cat(kEnvironmentVariable, "=", why));
  std::cerr << "warning: ignoring the saved host spec " << why
            << "; using the built-in one (`tilegraph calibrate --save` measures this machine again)\n";
  return std::nullopt;
}

fs::path host_spec_save_path() {
  const fs::path path = saved_host_spec_path();
  if (path.empty())
    throw UserError(environment(kEnvironmentVariable) == kOff
                        ? str_cat("--save: ", kEnvironmentVariable, "=", kOff, " turns saved host specs off")
                        : std::string("--save: neither XDG_CONFIG_HOME nor HOME is an absolute path; "
                                      "set TILEGRAPH_HOST_SPEC=FILE or use -o FILE"));
  return path;
}

fs::path save_host_spec(const scheduler::ArchSpec& spec) {
  const fs::path path = host_spec_save_path();
  std::error_code ec;
  if (!path.parent_path().empty()) fs::create_directories(path.parent_path(), ec);
  if (ec) throw UserError("--save: cannot create " + path.parent_path().string() + " (" + ec.message() + ")");
  replace_file(path, scheduler::arch_to_json(spec));
  return path;
}

}  // namespace tilegraph::driver
