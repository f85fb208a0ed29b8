"""Where a benchmark's artifacts live, and the exact commands that make them.

`run` executes these commands and `explain` prints them, from this one module, so
what `explain` tells a person to type is what the suite ran. Layout of a work folder:

    WORK/models/<model id>/model.onnx        models exported with torch2onnx
    WORK/compile/<compile benchmark id>/     the PREFIX given to `tilegraph tune`
        tune.log                             its output
        tilegraph_rt/<arch>/                 the generated project (build/main_test ...)
    WORK/run/<run benchmark id>/             main_test.json, inputs/*.npy, peer results, logs
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .._common import repo_root
from .definitions import CompileBenchmark, Model, RunBenchmark
from .devices import cpus_in_list

GENERATED_SUFFIXES = (".cpp", ".cu", ".hip", ".h")


def default_work_dir() -> Path:
    """$TILEGRAPH_BENCH_WORK, else build/bench in the source tree (ignored by git)."""
    env = os.environ.get("TILEGRAPH_BENCH_WORK")
    return Path(env) if env else repo_root() / "build" / "bench"


def model_onnx(model: Model, work: Path) -> Path:
    """The ONNX file of MODEL: the committed one, or where torch2onnx exports it."""
    if model.onnx:
        p = Path(model.onnx)
        return p if p.is_absolute() else repo_root() / p
    return work / "models" / model.id / "model.onnx"


def export_command(model: Model, work: Path) -> list[str] | None:
    """The torch2onnx command that creates MODEL's ONNX, or None for a committed model."""
    if model.onnx:
        return None
    prefix = model_onnx(model, work).parent
    return [sys.executable, "-m", "tilegraph.torch2onnx", model.zoo, "--prefix", str(prefix), *model.export_flags()]


def compile_prefix(build: CompileBenchmark, work: Path) -> Path:
    return work / "compile" / build.id


def project_dir(build: CompileBenchmark, work: Path) -> Path:
    """The generated project of BUILD (the arch folder's real spelling, as tune writes it)."""
    root = compile_prefix(build, work) / "tilegraph_rt"
    if root.is_dir():
        for d in root.iterdir():
            if d.name.lower() == build.compile.arch.lower():
                return d
    return root / build.compile.arch


def compile_command(tilegraph: str | Path, build: CompileBenchmark, work: Path, jobs: int,
                    no_build: bool = False, compiler_launcher: str = "") -> list[str]:
    cmd = [str(tilegraph), "tune", str(compile_prefix(build, work)), "--model", str(model_onnx(build.model, work)),
           *build.compile.tune_args(), "-j", str(jobs)]
    if compiler_launcher:
        cmd += ["--compiler-launcher", compiler_launcher]
    return cmd + (["--no-build"] if no_build else [])


def run_dir(bench: RunBenchmark, work: Path) -> Path:
    return work / "run" / bench.id


def resolved_threads(bench: RunBenchmark, all_cpus: int) -> int:
    """The thread count a run uses: its own, or every CPU it may use when it says 0."""
    if bench.run.threads > 0:
        return bench.run.threads
    if bench.run.cpus:
        return cpus_in_list(bench.run.cpus)
    return all_cpus


def pinning(bench: RunBenchmark) -> list[str]:
    return ["taskset", "-c", bench.run.cpus] if bench.run.cpus else []


def run_command(tilegraph: str | Path, bench: RunBenchmark, work: Path, threads: int, warmup: int,
                iters: int) -> list[str]:
    """`tilegraph run` with the timing flags; it also saves the inputs the peer reuses."""
    out = run_dir(bench, work)
    return [*pinning(bench), str(tilegraph), "run", str(compile_prefix(bench.build, work)),
            "--arch", bench.build.compile.arch, "--warmup", str(warmup), "--iters", str(iters),
            "--threads", str(threads), "--export-json", str(out / "main_test.json"),
            "--save-inputs", str(out / "inputs")]


def qemu_run_command(qemu: str, bench: RunBenchmark, work: Path, threads: int, warmup: int,
                     iters: int) -> list[str]:
    """main_test of an aarch64 project under qemu-aarch64 (with the cross sysroot)."""
    out = run_dir(bench, work)
    main_test = project_dir(bench.build, work) / "build" / "main_test"
    return [qemu, "-cpu", "max", "-L", "/usr/aarch64-linux-gnu", str(main_test),
            "--warmup", str(warmup), "--iters", str(iters), "--threads", str(threads),
            "--export-json", str(out / "main_test.json"), "--save-inputs", str(out / "inputs")]


def peer_command(peer: str, bench: RunBenchmark, work: Path, threads: int, warmup: int, iters: int) -> list[str]:
    """The child process that times PEER on the inputs main_test saved."""
    out = run_dir(bench, work)
    m = bench.model
    cmd = [*pinning(bench), sys.executable, "-m", "tilegraph.bench.peers", peer,
           "--onnx", str(model_onnx(m, work)), "--inputs", str(out / "inputs"),
           "--threads", str(threads), "--warmup", str(warmup), "--iters", str(iters),
           "--out", str(out / f"peer_{peer}.json")]
    if peer == "torch":
        cmd += ["--zoo", m.zoo, "--bs", str(m.batch_size), "--impl", m.impl]
        cmd += (["--small"] if m.small else []) + (["--fp16"] if m.fp16 else [])
    return cmd


def generated_source_bytes(project: Path) -> int:
    """Bytes of the code tune generated for the model (model.*, kernels*), not the
    runtime files every project carries unchanged."""
    total = 0
    for f in project.iterdir():
        if f.is_file() and f.suffix in GENERATED_SUFFIXES and f.name.startswith(("model.", "kernels")):
            total += f.stat().st_size
    return total


def shell_line(cmd: list[str]) -> str:
    return " ".join(shlex.quote(str(a)) for a in cmd)
