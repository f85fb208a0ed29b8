// tg_sanitizer.h — the checks of the GPU emulation's sanitizer mode
// (`tilegraph tune --arch GPU --emulate --sanitize`), pasted into the kernel
// prelude of the emulation project. The emulation runs a block's threads one
// after another, which hides what breaks kernels on real hardware; every
// shared and global access of a block kernel goes through these functions:
//
//   racecheck  a shared-memory byte written by one thread and read or
//              written by another in the same phase (between two barriers
//              or warp-collective steps): a missing __syncthreads().
//   initcheck  a shared-memory read of a byte no thread of the block wrote.
//   memcheck   every index inside its buffer (global: the tensor, shared:
//              the buffer's slice), every shared buffer inside the kernel's
//              declared shared memory.
//   alignment  shared buffers and global pointers aligned to their element
//              size (what a GPU's loads require).
//   warp size  warp-collective steps (mma.sync fragments: 32 lanes) only
//              on a target whose warps have 32 lanes.
//
// The first violation prints one report naming the kernel, its ONNX nodes,
// the phase, the buffer, the threads and the index, and exits with status 2.
// Blocks run one at a time in this mode (the shadow state is one block's).
// What it cannot see: timing, memory-model subtleties beyond barriers (e.g.
// warp-synchronous code without __syncwarp), races on global memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tg_san {

struct BufferInfo {
  const char* name;
  int64_t elements;  // the index range [0, elements)
  int elem_size;     // bytes
  int shared;        // 1: in the block's shared arena at `offset`
  int64_t offset;
};

struct State {
  const char* kernel = "";
  const char* nodes = "";
  const BufferInfo* buffers = nullptr;
  int64_t block = 0;
  int64_t phase = 0;   // barriers seen in this block
  int64_t epoch = 0;   // phases over the whole run (never reset)
  // Per shared byte: the last writer and its epoch, the reader(s) of this
  // epoch (-2: several threads), whether the block wrote it.
  std::vector<int64_t> writer, write_epoch, reader, read_epoch;
  std::vector<unsigned char> written;
};

inline State& state() {
  static State s;
  return s;
}

[[noreturn]] inline void report(const char* check, const char* what) {
  const State& s = state();
  std::fprintf(stderr, "tilegraph sanitizer (%s): kernel %s [ONNX nodes: %s], block %lld, phase %lld: %s\n", check,
               s.kernel, s.nodes, (long long)s.block, (long long)s.phase, what);
  std::fflush(stderr);
  std::exit(2);
}

inline std::string thread_name(int64_t t) {
  return t == -1 ? std::string("the block (all threads)") : t == -2 ? std::string("several threads")
                                                                      : "thread " + std::to_string(t);
}

// At the start of a kernel: its identity, buffers and launch checks.
inline void begin_kernel(const char* kernel, const char* nodes, const BufferInfo* buffers, int num_buffers,
                         const void* const* globals, int64_t shared_bytes, int threads, int warp_collective,
                         int warp_size) {
  State& s = state();
  s.kernel = kernel;
  s.nodes = nodes;
  s.buffers = buffers;
  s.block = s.phase = 0;
  char what[512];
  if (warp_collective && (warp_size != 32 || threads % 32 != 0)) {
    std::snprintf(what, sizeof what,
                  "a 32-lane warp-collective step (mma.sync fragments) with %d threads per block on a target whose "
                  "warps have %d lanes",
                  threads, warp_size);
    report("warp size", what);
  }
  int global = 0;
  for (int i = 0; i < num_buffers; ++i) {
    const BufferInfo& b = buffers[i];
    if (b.shared) {
      if (b.offset % b.elem_size != 0) {
        std::snprintf(what, sizeof what, "shared buffer %s at byte offset %lld is not aligned to its %d-byte elements",
                      b.name, (long long)b.offset, b.elem_size);
        report("alignment", what);
      }
      if (b.offset < 0 || b.offset + b.elements * b.elem_size > shared_bytes) {
        std::snprintf(what, sizeof what,
                      "shared buffer %s (bytes %lld..%lld) does not fit the kernel's %lld bytes of shared memory",
                      b.name, (long long)b.offset, (long long)(b.offset + b.elements * b.elem_size),
                      (long long)shared_bytes);
        report("memcheck", what);
      }
    } else {
      const uintptr_t address = reinterpret_cast<uintptr_t>(globals[global++]);
      if (address % static_cast<uintptr_t>(b.elem_size) != 0) {
        std::snprintf(what, sizeof what, "global buffer %s at address %#llx is not aligned to its %d-byte elements",
                      b.name, (unsigned long long)address, b.elem_size);
        report("alignment", what);
      }
    }
  }
  const size_t bytes = static_cast<size_t>(shared_bytes);
  s.writer.assign(bytes, -1);
  s.write_epoch.assign(bytes, -1);
  s.reader.assign(bytes, -1);
  s.read_epoch.assign(bytes, -1);
  s.written.assign(bytes, 0);
}

// A new block: nothing of its shared memory is written yet.
inline void begin_block(int64_t block) {
  State& s = state();
  s.block = block;
  s.phase = 0;
  ++s.epoch;
  std::fill(s.written.begin(), s.written.end(), 0);
}

// A barrier or a warp-collective step ends the phase.
inline void barrier() {
  ++state().phase;
  ++state().epoch;
}

inline void check_bounds(int buffer, int64_t index, int64_t thread, const char* access) {
  const BufferInfo& b = state().buffers[buffer];
  if (index >= 0 && index < b.elements) return;
  char what[512];
  std::snprintf(what, sizeof what, "%s %s %s[%lld], outside its %lld elements", thread_name(thread).c_str(), access,
                b.name, (long long)index, (long long)b.elements);
  report("memcheck", what);
}

// Calls f(i) for the shadow index of each byte of shared buffer[index].
template <typename F>
inline void each_byte(const BufferInfo& b, int64_t index, F f) {
  for (int64_t byte = b.offset + index * b.elem_size, end = byte + b.elem_size; byte < end; ++byte)
    f(static_cast<size_t>(byte));
}

// Index of a load whose value is not used (the other branch of a Select,
// which a GPU evaluates too): in bounds, nothing more.
inline int64_t bounds(int buffer, int64_t index, int64_t thread) {
  check_bounds(buffer, index, thread, "reads");
  return index;
}

// Index of a load of buffer[index] by thread (-1: block-level code, every thread).
inline int64_t load(int buffer, int64_t index, int64_t thread) {
  check_bounds(buffer, index, thread, "reads");
  State& s = state();
  const BufferInfo& b = s.buffers[buffer];
  if (!b.shared) return index;
  char what[512];
  each_byte(b, index, [&](size_t i) {
    if (!s.written[i]) {
      std::snprintf(what, sizeof what, "%s reads %s[%lld], which no thread of the block has written",
                    thread_name(thread).c_str(), b.name, (long long)index);
      report("initcheck", what);
    }
    if (s.write_epoch[i] == s.epoch && (s.writer[i] != thread || thread == -1)) {
      std::snprintf(what, sizeof what,
                    "%s reads shared %s[%lld], which %s wrote in the same phase (a missing barrier?)",
                    thread_name(thread).c_str(), b.name, (long long)index, thread_name(s.writer[i]).c_str());
      report("racecheck", what);
    }
    if (s.read_epoch[i] != s.epoch) {
      s.read_epoch[i] = s.epoch;
      s.reader[i] = thread;
    } else if (s.reader[i] != thread) {
      s.reader[i] = -2;
    }
  });
  return index;
}

// Index of a store to buffer[index] by thread.
inline int64_t store(int buffer, int64_t index, int64_t thread) {
  check_bounds(buffer, index, thread, "writes");
  State& s = state();
  const BufferInfo& b = s.buffers[buffer];
  if (!b.shared) return index;
  char what[512];
  each_byte(b, index, [&](size_t i) {
    if (s.write_epoch[i] == s.epoch && s.writer[i] != thread) {
      std::snprintf(what, sizeof what, "%s writes shared %s[%lld], which %s wrote in the same phase",
                    thread_name(thread).c_str(), b.name, (long long)index, thread_name(s.writer[i]).c_str());
      report("racecheck", what);
    }
    if (s.read_epoch[i] == s.epoch && s.reader[i] != thread) {
      std::snprintf(what, sizeof what,
                    "%s writes shared %s[%lld], which %s read in the same phase (a missing barrier?)",
                    thread_name(thread).c_str(), b.name, (long long)index, thread_name(s.reader[i]).c_str());
      report("racecheck", what);
    }
    s.writer[i] = thread;
    s.write_epoch[i] = s.epoch;
    s.written[i] = 1;
  });
  return index;
}

}  // namespace tg_san
