// The host spec `tilegraph calibrate --save` keeps for this machine, which
// `--arch host` then uses in place of the built-in one (nominal speeds and
// the caches sysfs reports). With the built-in spec the cost model's first
// tile config is the profiled best (within 10%) for about half of the
// full-size kernels on a Zen 3 VM; with a calibrated one for 86%
// (docs/cost_model_accuracy.md). Calibrating takes seconds, so users do it
// once, and every later tune, explain and `tilegraph arch` picks it up.
//
// Where it lives: $TILEGRAPH_HOST_SPEC when set (a file path; "builtin"
// turns saved specs off, as the test suite does to stay independent of the
// machine's saved state), else $XDG_CONFIG_HOME/tilegraph/host.json, else
// ~/.config/tilegraph/host.json.
//
// A saved spec is used only while it describes this machine: same ISA and
// cache sizes, no more cores than it has (a disk image copied to another
// machine, or a changed VM, falls back to the built-in spec with a warning
// naming the difference).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "scheduler/arch_spec.h"

namespace tilegraph::driver {

// The file `calibrate --save` writes and `--arch host` reads; empty when
// saved specs are off (TILEGRAPH_HOST_SPEC=builtin) or there is no home.
std::filesystem::path saved_host_spec_path();

// Why SAVED does not describe HERE (the machine's built-in host spec), e.g.
// "its l2 is 1.0 MiB, this machine's 512.0 KiB"; empty when it does.
std::string host_spec_mismatch(const scheduler::ArchSpec& saved, const scheduler::ArchSpec& here);

struct SavedHostSpec {
  std::filesystem::path path;
  scheduler::ArchSpec spec;
};

// The saved spec when there is one that fits this machine. A file at the
// default place that cannot be parsed or fits another machine is skipped
// with a one-line warning on stderr (it is a cache of measurements, and a
// stale one must not stop a tune); one named by TILEGRAPH_HOST_SPEC is the
// user's explicit choice, so the same problems throw UserError.
std::optional<SavedHostSpec> load_saved_host_spec();

// saved_host_spec_path(), or a UserError saying why there is none (saved
// specs are off, or no absolute config folder): calibrate --save asks first,
// before it measures.
std::filesystem::path host_spec_save_path();

// Writes SPEC (a calibrated host spec) to host_spec_save_path(), creating
// its folder; returns the path. Throws UserError when the file cannot be
// written.
std::filesystem::path save_host_spec(const scheduler::ArchSpec& spec);

}  // namespace tilegraph::driver
