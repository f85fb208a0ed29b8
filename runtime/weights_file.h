// weights_file.h — read-only access to weights.bin for the generated model.cpp.
//
// The weights are mapped rather than read so that creating a model costs no
// copy and the pages are shared between processes running the same model. If
// mmap is unavailable or fails (some network filesystems), the file is read
// into an aligned heap buffer instead; callers cannot tell the difference.
//
// weights.bin as `tilegraph tune` writes it: a header of
// TG_WEIGHTS_HEADER_BYTES, then the weights at the offsets model.cpp was
// compiled with. The header is text padded with NULs,
//   "tilegraph-weights/1 <16 hex digits>\n"
// the digits being the project hash (a hash of the model, the tune flags and
// the tilegraph version) that model.cpp carries too: a weights.bin from
// another tune is refused at load instead of computing with wrong weights.
//
// Usage in model.cpp (tg_model_create / tg_model_destroy):
//
//   char err[512];
//   if (tg_open_weights(weights_path, kProjectHash, kWeightsBytes, &model->weights, err, sizeof err) != 0) {
//     set_last_error(err);   // err: "weights file 'PATH': cannot open: No such file or directory"
//     return 1;
//   }
//   const float* w0 = (const float*)(model->weights.data + TG_WEIGHTS_HEADER_BYTES + OFFSET_0);
//   ...
//   tg_unmap_weights(&model->weights);
//
// Plain C types so generated code can keep the handle inside any struct.
#ifndef TILEGRAPH_RT_WEIGHTS_FILE_H
#define TILEGRAPH_RT_WEIGHTS_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tg_weights {
  const uint8_t* data;  // base address, at least 64-byte aligned; NULL when size == 0
  size_t size;          // file size in bytes
  int mapped;           // 1: mmap'ed, 0: heap copy (how tg_unmap_weights releases it)
} tg_weights;

// Maps the file at `path` read-only into *out. Returns 0 on success. On
// failure returns non-zero, leaves *out empty, and writes a one-line message
// naming the file and the cause into errbuf (truncated to errbuf_size; errbuf
// may be NULL). An empty file succeeds with data == NULL and size == 0.
int tg_map_weights(const char* path, tg_weights* out, char* errbuf, size_t errbuf_size);

#define TG_WEIGHTS_HEADER_BYTES 64
#define TG_WEIGHTS_MAGIC "tilegraph-weights/1"

// Checks a mapped weights.bin (`path` only names it in the message): its
// header names project `hash` (16 hex digits) and exactly `weights_bytes`
// follow it. Returns 0 when it does; otherwise non-zero with a one-line
// message in errbuf (truncated to errbuf_size; errbuf may be NULL).
int tg_check_weights(const tg_weights* w, const char* path, const char* hash, int64_t weights_bytes, char* errbuf,
                     size_t errbuf_size);

// tg_map_weights, then tg_check_weights: what a model's create does. On a
// failed check nothing stays mapped (*out is empty).
int tg_open_weights(const char* path, const char* hash, int64_t weights_bytes, tg_weights* out, char* errbuf,
                    size_t errbuf_size);

// Releases what tg_map_weights acquired and empties *w. Safe on an empty or
// already released handle.
void tg_unmap_weights(tg_weights* w);

#endif  // TILEGRAPH_RT_WEIGHTS_FILE_H
