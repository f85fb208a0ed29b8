#!/usr/bin/env python3
"""ONNX backend node tests through tilegraph's generated code.

For every test in Debian's libonnx-testdata (/usr/share/libonnx-testdata/data/node)
whose ops tilegraph lowers (`tilegraph ops`) and that is not in skip_list.txt:
  1. `tilegraph tune PREFIX --no-build` writes the generated project (with
     --arch GPU: the CPU emulation of the GPU kernels, tune --emulate),
  2. its libmodel.so is compiled from the project's own sources with the
     project's flags (one g++ call on one translation unit that includes them;
     see below),
  3. main_test runs it on the test's inputs (.pb converted to .npy); inputs
     that decide shapes are frozen into the model with --freeze-input,
  4. outputs are compared with the expected ones: |a-b| <= atol + rtol*|b|
     (rtol 1e-3, atol 1e-5 like ONNX's backend runner; integers and bools exact).
Prints `N passed, M failed, K skipped` and exits non-zero on any failure.

Why not `cmake --build` per test: configuring and compiling main_test for each of
hundreds of tests takes ~5 s each on a 2-core machine. main_test and the runtime
do not depend on the model (they use only the C API), so one main_test is built
once from runtime/ and each test's libmodel.so is loaded through LD_LIBRARY_PATH.
The system headers the generated code includes are precompiled once too
(build_pch). The CMake path of generated projects is covered by the model tests.
"""
import argparse
import concurrent.futures as futures
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = Path("/usr/share/libonnx-testdata/data/node")
MODEL_FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp",
               "-shared", "-fPIC", "-std=c++17"]
# As a generated x86 project asks (codegen/project/project_target.cpp): 512-bit simd loops.
if platform.machine() in ("x86_64", "AMD64"):
    MODEL_FLAGS.append("-mprefer-vector-width=512")


# The system headers a generated CPU project (and its CPU emulation of a GPU
# schedule) includes: parsed once into a precompiled header that every test's
# compile takes first (-include). Parsing them was most of each compile (GCC 12
# with -march=native: <immintrin.h> 1.6 s, the C++ ones 1.4 s, of a 4 s
# compile of a one-kernel test on a 2 GHz Zen 1 core). A header a project
# includes later is then skipped by its include guard; one missing here is
# parsed as before.
PCH_HEADERS = ["algorithm", "atomic", "chrono", "climits", "cmath", "cstddef", "cstdint", "cstdlib", "cstring",
               "limits", "memory", "mutex", "new", "string", "thread", "type_traits", "utility", "vector",
               "omp.h", "sched.h", "unistd.h", "sys/syscall.h", "sys/resource.h", "linux/futex.h"]
if platform.machine() in ("x86_64", "AMD64"):
    PCH_HEADERS.append("immintrin.h")
elif platform.machine() in ("aarch64", "arm64"):
    PCH_HEADERS.append("arm_neon.h")


def build_pch(work):
    """The precompiled header (work/pch/tg_node_pch.h + .gch) for MODEL_FLAGS; the
    flags every test compile then adds (none where GCC could not build it)."""
    header = work / "pch" / "tg_node_pch.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text("".join(f"#include <{h}>\n" for h in PCH_HEADERS))
    flags = [f for f in MODEL_FLAGS if f != "-shared"]
    built = subprocess.run(["g++", *flags, "-x", "c++-header", "-o", str(header) + ".gch", str(header)],
                           capture_output=True, text=True)
    return ["-include", str(header)] if built.returncode == 0 else []


# Link-time stand-in for libmodel.so: main_test is linked against it once,
# and each test's real libmodel.so replaces it at run time (LD_LIBRARY_PATH).
STUB_MODEL = """#include "tilegraph_model.h"
extern "C" {
int tg_model_create(const char*, tg_model**) { return 1; }
void tg_model_destroy(tg_model*) {}
const char* tg_last_error(void) { return "stub"; }
int tg_num_inputs(void) { return 0; }
int tg_num_outputs(void) { return 0; }
tg_tensor_info tg_input_info(int) { return tg_tensor_info{}; }
tg_tensor_info tg_output_info(int) { return tg_tensor_info{}; }
int tg_model_run(tg_model*, const void* const*, void* const*) { return 1; }
void tg_set_num_threads(int) {}
int tg_num_kernels(void) { return 0; }
const char* tg_kernel_name(int) { return ""; }
const char* tg_kernel_nodes(int) { return ""; }
void tg_set_profiling(tg_model*, int) {}
void tg_reset_profile(tg_model*) {}
double tg_kernel_time_ms(const tg_model*, int) { return 0; }
}
"""


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def read_skip_list():
    skip = {}
    for line in (REPO / "tests/conformance/skip_list.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        skip[parts[0]] = parts[1] if len(parts) > 1 else ""
    return skip


def compare(name, expected, got):
    if expected.shape != got.shape:
        return f"{name}: shape {got.shape} != expected {expected.shape}"
    if expected.dtype != got.dtype:
        return f"{name}: dtype {got.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu":
        bad = np.flatnonzero(expected != got)
        if bad.size:
            i = bad[0]
            return f"{name}: element {i}: got {got.flat[i]}, expected {expected.flat[i]}"
        return ""
    e = expected.astype(np.float64)
    g = got.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(g)
    same_inf = np.isinf(e) & (e == g)
    ok = both_nan | same_inf | (np.abs(e - g) <= 1e-5 + 1e-3 * np.abs(e))
    if not ok.all():
        i = np.flatnonzero(~ok)[0]
        return f"{name}: element {i}: got {g.flat[i]}, expected {e.flat[i]}"
    return ""


def run_one(test_dir, tilegraph, work, main_test, arch="host", pch=()):
    name = test_dir.name
    prefix = work / name
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    shutil.copy(test_dir / "model.onnx", prefix / "model.onnx")
    model = onnx.load(str(test_dir / "model.onnx"), load_external_data=False)
    init_names = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in init_names]
    data = test_dir / "test_data_set_0"
    # Shape-deciding operands (Reshape's shape, Resize's scales...) are graph
    # inputs in many node tests; static shapes need them constant. If tune
    # refuses, retry with them frozen (--freeze-input): first every input but
    # the data input 0, then all of them.
    first_error = None
    for frozen_from in dict.fromkeys([len(inputs), 1, 0]):  # inputs[frozen_from:] are frozen
        frozen_names = {i.name for i in inputs[frozen_from:]}
        in_dir = prefix / "in"
        shutil.rmtree(in_dir, ignore_errors=True)
        in_dir.mkdir()
        flags = []
        for k, info in enumerate(inputs):
            pb = data / f"input_{k}.pb"
            if info.name in frozen_names:
                flags += ["--freeze-input", f"{info.name}={pb}"]
                continue
            t = onnx.TensorProto()
            t.ParseFromString(pb.read_bytes())
            np.save(in_dir / (sanitize(info.name) + ".npy"), numpy_helper.to_array(t))
        arch_flags = [] if arch == "host" else ["--arch", arch, "--emulate"]
        tune = subprocess.run([tilegraph, "tune", str(prefix), "--no-build", *arch_flags, *flags],
                              capture_output=True, text=True)
        if tune.returncode == 0:
            break
        first_error = first_error or (tune.stderr.strip().splitlines() or ["?"])[-1]
    if tune.returncode != 0:
        return name, "tune: " + first_error
    # A GPU arch runs through the CPU emulation of its kernels (the exact GPU schedule).
    project = prefix / "tilegraph_rt" / arch / ("emulation" if arch != "host" else "")
    lib = project / "libmodel.so"
    kernel_files = [str(p) for p in sorted(project.glob("kernels_*.cpp"))]
    # One translation unit including model.cpp and the kernel files parses the
    # runtime headers once: 1.0 s instead of 1.8 s for a one-kernel test, most
    # of each test's time. Where it does not compile (names two files keep to
    # themselves), the files as the project builds them.
    unity = prefix / "unity.cpp"
    unity.write_text("".join(f'#include "{f}"\n' for f in [str(project / "model.cpp"), *kernel_files]))
    cc = subprocess.run(["g++", *MODEL_FLAGS, *pch, "-o", str(lib), str(unity), str(work / "weights_file.o")],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        cc = subprocess.run(["g++", *MODEL_FLAGS, *pch, "-o", str(lib), str(project / "model.cpp"), *kernel_files,
                             str(work / "weights_file.o")], capture_output=True, text=True)
    if cc.returncode != 0:
        first = next((l for l in cc.stderr.splitlines() if "error" in l), cc.stderr[-300:])
        return name, "compile: " + first.strip()
    env = dict(os.environ, LD_LIBRARY_PATH=str(project), OMP_NUM_THREADS="1")
    run = subprocess.run([str(main_test), "--weights", str(project / "weights.bin"), "--inputs",
                          str(prefix / "in"), "--outputs", str(prefix / "out"), "--warmup", "0",
                          "--iters", "1"], capture_output=True, text=True, env=env, timeout=120)
    if run.returncode != 0:
        return name, "run: " + (run.stderr.strip().splitlines() or ["exit %d" % run.returncode])[-1]
    for k, info in enumerate(model.graph.output):
        t = onnx.TensorProto()
        t.ParseFromString((data / f"output_{k}.pb").read_bytes())
        expected = numpy_helper.to_array(t)
        got = np.load(prefix / "out" / (sanitize(info.name) + ".npy"))
        err = compare(info.name, expected, got)
        if err:
            return name, err
    shutil.rmtree(prefix, ignore_errors=True)
    return name, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilegraph", default=os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph")))
    ap.add_argument("--filter", default="", help="only tests whose name contains this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--work", default="", help="work folder (default: a temporary one)")
    ap.add_argument("--arch", default="host",
                    help="target; a GPU arch (H100, V100...) is checked through its CPU emulation")
    args = ap.parse_args()
    if not NODE_DIR.exists():
        print("libonnx-testdata is not installed (apt-get install libonnx-testdata)", file=sys.stderr)
        return 2
    supported = set(subprocess.run([args.tilegraph, "ops"], capture_output=True, text=True,
                                   check=True).stdout.split())
    skip = read_skip_list()
    tests, skipped = [], 0
    for d in sorted(NODE_DIR.iterdir()):
        if args.filter and args.filter not in d.name:
            continue
        model = onnx.load(str(d / "model.onnx"), load_external_data=False)
        if not all(n.domain in ("", "ai.onnx") and n.op_type in supported for n in model.graph.node):
            continue
        if d.name in skip:
            skipped += 1
            continue
        tests.append(d)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="tg_node_tests_"))
    work.mkdir(parents=True, exist_ok=True)
    # One main_test for all tests; it links libmodel.so by name (see module doc).
    stub = work / "stub"
    stub.mkdir(exist_ok=True)
    stub_src = stub / "stub_model.cpp"
    stub_src.write_text(STUB_MODEL)
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(stub / "libmodel.so"), str(stub_src),
                    "-I", str(REPO / "runtime")], check=True)
    # weights_file.cpp is the same in every project: compile it once.
    subprocess.run(["g++", *[f for f in MODEL_FLAGS if f != "-shared"], "-c", "-o", str(work / "weights_file.o"),
                    str(REPO / "runtime/weights_file.cpp")], check=True)
    main_test = work / "main_test"
    sources = [str(p) for p in sorted((REPO / "runtime").glob("*.cpp")) if p.name != "weights_file.cpp"]
    subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(main_test), *sources, "-I", str(REPO / "runtime"),
                    "-L", str(stub), "-lmodel"], check=True)
    pch = build_pch(work)
    if not pch:
        print("note: no precompiled header (g++ could not build it); each test parses the system headers")
    start = time.time()
    failures = []
    passed = 0
    with futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for i, (name, err) in enumerate(pool.map(lambda d: run_one(d, args.tilegraph, work, main_test, args.arch, pch), tests)):
            if err:
                failures.append((name, err))
                print(f"FAIL {name}: {err}", flush=True)
            else:
                passed += 1
            if (i + 1) % 50 == 0:
                print(f"  ... {i + 1}/{len(tests)} done, {time.time() - start:.0f} s", flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"node tests (generated code): {passed} passed, {len(failures)} failed, {skipped} skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
