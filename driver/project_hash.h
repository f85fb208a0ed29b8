// The identity of one compile: a content hash of the model, the flags that
// shape the generated project and the tilegraph version. weights.bin's
// header, model.cpp (so libmodel.so) and manifest.json carry it, and the
// model refuses weights from another compile when it loads
// (runtime/weights_file.h): a half-replaced project fails with a clear
// message instead of computing with the wrong weights.
//
// Only content counts, not paths: the same model tuned in two folders
// gives byte-identical projects.
#pragma once
#include <string>

#include "codegen/project/memory_plan.h"
#include "driver/pipeline.h"
#include "compiler/ir/graph.h"

namespace tilegraph::driver {

// 16 hex digits over: the tilegraph version; the flags of `options` that
// change the project (arch, cpu features, topk, fusion, profiling, fp16,
// emulation, skip-dot, input shapes, frozen inputs); the bytes of the model
// file; and the constants weights.bin will hold (which covers external data).
std::string project_hash(const CompileOptions& options, const Graph& g, const codegen::MemoryPlan& plan);

}  // namespace tilegraph::driver
