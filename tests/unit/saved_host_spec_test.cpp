// The saved host spec (driver/saved_host_spec.h): where it lives, which
// environment chooses it, and that one measured on another machine is told
// apart by what differs.
#include "driver/saved_host_spec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace tilegraph::driver {
namespace {

// Sets (or, with nullopt, unsets) an environment variable for one test and
// restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(SavedHostSpec, PathFollowsTheEnvironment) {
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv chosen("TILEGRAPH_HOST_SPEC", std::nullopt);
    ScopedEnv config("XDG_CONFIG_HOME", std::nullopt);
    EXPECT_EQ(saved_host_spec_path(), "/home/u/.config/tilegraph/host.json");
  }
  {
    ScopedEnv chosen("TILEGRAPH_HOST_SPEC", std::nullopt);
    ScopedEnv config("XDG_CONFIG_HOME", "/cfg");
    EXPECT_EQ(saved_host_spec_path(), "/cfg/tilegraph/host.json");
  }
  {  // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    ScopedEnv chosen("TILEGRAPH_HOST_SPEC", std::nullopt);
    ScopedEnv config("XDG_CONFIG_HOME", "cfg");
    EXPECT_EQ(saved_host_spec_path(), "/home/u/.config/tilegraph/host.json");
  }
  {
    ScopedEnv chosen("TILEGRAPH_HOST_SPEC", "/specs/box.json");
    ScopedEnv config("XDG_CONFIG_HOME", "/cfg");
    EXPECT_EQ(saved_host_spec_path(), "/specs/box.json");
  }
  {
    ScopedEnv chosen("TILEGRAPH_HOST_SPEC", "builtin");
    EXPECT_TRUE(saved_host_spec_path().empty());
    EXPECT_EQ(load_saved_host_spec(), std::nullopt);
  }
}

TEST(SavedHostSpec, AMachineWithOtherCachesOrIsaDoesNotMatch) {
  const scheduler::ArchSpec here = scheduler::host_arch();
  EXPECT_EQ(host_spec_mismatch(here, here), "");

  scheduler::ArchSpec fewer_cores = here;
  fewer_cores.cores = 1;  // calibrate --cores 1 on a bigger machine: still this machine
  EXPECT_EQ(host_spec_mismatch(fewer_cores, here), "");

  scheduler::ArchSpec more_cores = here;
  more_cores.cores = here.cores + 1;
  EXPECT_EQ(host_spec_mismatch(more_cores, here),
            "it was calibrated on " + std::to_string(here.cores + 1) + " cores, this machine has " +
                std::to_string(here.cores));

  scheduler::ArchSpec other_l2 = here;
  other_l2.l2_bytes = here.l2_bytes == (4 << 20) ? (2 << 20) : (4 << 20);
  EXPECT_NE(host_spec_mismatch(other_l2, here).find("its l2 is "), std::string::npos);

  scheduler::ArchSpec other_isa = here;
  other_isa.isa = "armv8-a";
  EXPECT_EQ(host_spec_mismatch(other_isa, here), "its ISA is armv8-a, this machine's " + here.isa);

  scheduler::ArchSpec gpu = scheduler::arch_by_name("H100");
  EXPECT_EQ(host_spec_mismatch(gpu, here), "it describes H100 (cuda), not the host CPU");
}

}  // namespace
}  // namespace tilegraph::driver
