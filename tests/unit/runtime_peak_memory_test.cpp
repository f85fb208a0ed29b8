// Tests of runtime/peak_memory: parsing /proc/<pid>/status texts, and this
// process's own high-water mark rising when it touches memory.
#include "peak_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

using namespace tilegraph::rt;

namespace {

TEST(ParseVmHwm, ReadsTheKibOfItsLine) {
  const std::string status =
      "Name:\tmain_test\nVmPeak:\t   20480 kB\nVmSize:\t   18432 kB\nVmHWM:\t    7812 kB\nVmRSS:\t    7700 kB\n";
  EXPECT_EQ(parse_vm_hwm(status), 7812 * 1024);
}

TEST(ParseVmHwm, LastLineWithoutNewline) { EXPECT_EQ(parse_vm_hwm("Name:\tx\nVmHWM:\t12 kB"), 12 * 1024); }

TEST(ParseVmHwm, MissingOrMalformedIsUnknown) {
  EXPECT_EQ(parse_vm_hwm(""), -1);
  EXPECT_EQ(parse_vm_hwm("VmRSS:\t100 kB\n"), -1);         // no VmHWM line (a kernel thread)
  EXPECT_EQ(parse_vm_hwm("VmHWM:\t\n"), -1);               // no number
  EXPECT_EQ(parse_vm_hwm("VmHWM:\t-5 kB\n"), -1);
  EXPECT_EQ(parse_vm_hwm("VmHWM:\t100 MB\n"), -1);         // not the kernel's unit
  EXPECT_EQ(parse_vm_hwm("VmHWM:\t100\n"), -1);
  EXPECT_EQ(parse_vm_hwm("VmHWM:\t99999999999999999999 kB\n"), -1);  // overflows int64 bytes
  EXPECT_EQ(parse_vm_hwm("XVmHWM:\t100 kB\n"), -1);        // the key starts its line
}

#if defined(__linux__)
TEST(PeakResidentBytes, RisesByWhatThisProcessTouches) {
  const int64_t before = peak_resident_bytes();
  ASSERT_GT(before, 0);
  constexpr size_t kBytes = size_t(64) << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);  // resident only once written
  const int64_t after = peak_resident_bytes();
  EXPECT_GE(after, before + int64_t(kBytes) - (int64_t(4) << 20)) << block[kBytes - 1];
  block.reset();
  // A high-water mark: freeing does not lower it (but for the slack of the
  // kernel's RSS counters, which are batched per thread and CPU).
  EXPECT_GE(peak_resident_bytes(), after - (int64_t(1) << 20));
}
#endif

}  // namespace
