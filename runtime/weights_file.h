// weights_file.h — read-only access to weights.bin for the generated model.cpp.
//
// The weights are mapped rather than read so that creating a model costs no
// copy and the pages are shared between processes running the same model. If
// mmap is unavailable or fails (some network filesystems), the file is read
// into an aligned heap buffer instead; callers cannot tell the difference.
//
// Usage in model.cpp (tg_model_create / tg_model_destroy):
//
//   char err[512];
//   if (tg_map_weights(weights_path, &model->weights, err, sizeof err) != 0) {
//     set_last_error(err);   // err: "weights file 'PATH': cannot open: No such file or directory"
//     return 1;
//   }
//   const float* w0 = (const float*)(model->weights.data + OFFSET_0);
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

// Releases what tg_map_weights acquired and empties *w. Safe on an empty or
// already released handle.
void tg_unmap_weights(tg_weights* w);

#endif  // TILEGRAPH_RT_WEIGHTS_FILE_H
