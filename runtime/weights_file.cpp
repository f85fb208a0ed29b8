// weights_file.cpp — see weights_file.h.
#include "weights_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#define TG_HAVE_MMAP 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace {

constexpr size_t kAlignment = 64;  // mmap gives a page; the heap copy matches the cache line

int report(char* errbuf, size_t errbuf_size, const char* path, const std::string& cause) {
  if (errbuf != nullptr && errbuf_size > 0) {
    std::snprintf(errbuf, errbuf_size, "weights file '%s': %s", path, cause.c_str());
  }
  return 1;
}

// The fallback: read the whole file into an aligned heap buffer.
int read_into_memory(const char* path, tg_weights* out, char* errbuf, size_t errbuf_size) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return report(errbuf, errbuf_size, path, std::string("cannot open: ") + std::strerror(errno));
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  if (size < 0 || std::fseek(f, 0, SEEK_SET) != 0) {
    std::fclose(f);
    return report(errbuf, errbuf_size, path, "cannot determine its size");
  }
  if (size == 0) {
    std::fclose(f);
    return 0;
  }
  size_t rounded = (size_t(size) + kAlignment - 1) / kAlignment * kAlignment;
  void* buf = std::aligned_alloc(kAlignment, rounded);
  if (buf == nullptr) {
    std::fclose(f);
    return report(errbuf, errbuf_size, path, "out of memory reading " + std::to_string(size) + " bytes");
  }
  size_t got = std::fread(buf, 1, size_t(size), f);
  std::fclose(f);
  if (got != size_t(size)) {
    std::free(buf);
    return report(errbuf, errbuf_size, path,
                  "short read: " + std::to_string(got) + " of " + std::to_string(size) + " bytes");
  }
  out->data = static_cast<const uint8_t*>(buf);
  out->size = size_t(size);
  out->mapped = 0;
  return 0;
}

}  // namespace

int tg_map_weights(const char* path, tg_weights* out, char* errbuf, size_t errbuf_size) {
  if (out == nullptr) return report(errbuf, errbuf_size, path ? path : "(null)", "no output handle");
  *out = tg_weights{nullptr, 0, 0};
  if (path == nullptr || path[0] == '\0') return report(errbuf, errbuf_size, "", "no path given");
#ifdef TG_HAVE_MMAP
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) return report(errbuf, errbuf_size, path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return report(errbuf, errbuf_size, path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return report(errbuf, errbuf_size, path, "not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return 0;  // a model without weights
  }
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;  // fault the pages in now, not during the first inference
#endif
  void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, flags, fd, 0);
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p != MAP_FAILED) {
    out->data = static_cast<const uint8_t*>(p);
    out->size = size_t(st.st_size);
    out->mapped = 1;
    return 0;
  }
#endif
  return read_into_memory(path, out, errbuf, errbuf_size);
}

int tg_check_weights(const tg_weights* w, const char* path, const char* hash, int64_t weights_bytes, char* errbuf,
                     size_t errbuf_size) {
  if (path == nullptr) path = "";
  const std::string magic = TG_WEIGHTS_MAGIC " ";
  const size_t size = w != nullptr ? w->size : 0;
  if (size < TG_WEIGHTS_HEADER_BYTES || std::memcmp(w->data, magic.data(), magic.size()) != 0)
    return report(errbuf, errbuf_size, path,
                  "not a tilegraph weights file (no '" TG_WEIGHTS_MAGIC "' header; written by an older "
                  "tilegraph? run `tilegraph tune` again)");
  const std::string found(reinterpret_cast<const char*>(w->data) + magic.size(), 16);
  if (found != hash)
    return report(errbuf, errbuf_size, path,
                  "written by another tune (project hash " + found + "; this library: " + hash +
                      "): weights.bin and libmodel.so come from different tunes; run `tilegraph tune` again");
  if (int64_t(size - TG_WEIGHTS_HEADER_BYTES) != weights_bytes)
    return report(errbuf, errbuf_size, path,
                  "holds " + std::to_string(size - TG_WEIGHTS_HEADER_BYTES) + " bytes of weights, this model needs " +
                      std::to_string(weights_bytes) + " (truncated?)");
  return 0;
}

int tg_open_weights(const char* path, const char* hash, int64_t weights_bytes, tg_weights* out, char* errbuf,
                    size_t errbuf_size) {
  if (tg_map_weights(path, out, errbuf, errbuf_size) != 0) return 1;
  if (tg_check_weights(out, path, hash, weights_bytes, errbuf, errbuf_size) == 0) return 0;
  tg_unmap_weights(out);
  return 1;
}

void tg_unmap_weights(tg_weights* w) {
  if (w == nullptr || w->data == nullptr) return;
#ifdef TG_HAVE_MMAP
  if (w->mapped) {
    ::munmap(const_cast<uint8_t*>(w->data), w->size);
    *w = tg_weights{nullptr, 0, 0};
    return;
  }
#endif
  std::free(const_cast<uint8_t*>(w->data));
  *w = tg_weights{nullptr, 0, 0};
}
