// peak_memory.h — this process's own peak resident memory, for main_test's report.
//
// A parent that reads its child's peak through wait4 (ru_maxrss) does not get
// the child program's own figure: Linux starts a forked child's high-water mark
// at the parent's resident size and carries it across exec, so a main_test
// started by a large Python process (a Ray worker) seems to peak at that
// process's size. VmHWM in /proc/self/status belongs to the current address
// space, which exec replaces, so it is main_test's alone.
#ifndef TILEGRAPH_RT_PEAK_MEMORY_H
#define TILEGRAPH_RT_PEAK_MEMORY_H

#include <cstdint>
#include <string>

namespace tilegraph::rt {

// The peak resident memory of this process so far, in bytes (VmHWM); -1 where
// it is unknown (no /proc/self/status: not Linux, or /proc not mounted).
int64_t peak_resident_bytes();

// The VmHWM of a /proc/<pid>/status text ("VmHWM:\t    7812 kB"), in bytes;
// -1 if the line is missing or not a number of kB.
int64_t parse_vm_hwm(const std::string& status_text);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_PEAK_MEMORY_H
