"""`run --executor ray`: the same suite on a Ray cluster (docs/farm.md).

Every compile step is a Ray task that takes CPUs; every run step a task that takes
one unit of the custom resource its device spec maps to (resources.py), so it lands
on a worker that has that device. The head (this process) only submits tasks, waits
for them and merges their records into one results.json with the schema and IDs of
a local run; each record adds ``worker`` (hostname, Ray node id, pid).

Artifacts: a compile task returns the compiled prefix as a gzipped tar in Ray's
object store (at most ``artifact_limit_bytes``; CMake's intermediate objects left
out); a run task on another machine unpacks it into the same path under its own
work folder, so commands and paths read alike everywhere. A node that compiled the
project itself, or that shares the work folder, finds it already there (same digest)
and unpacks nothing.

Failures: a task whose worker dies is retried (``max_retries``); a run step whose
resource no node offers waits at most ``device_wait_s`` for one to join, then is
recorded ``skipped: no worker with resource ...``. A resource that disappears while
its tasks wait (its only worker left) is treated alike, so nothing waits forever.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import io
import os
import shutil
import sys
import tarfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import _common
from . import devices
from . import results as res
from . import workspace as ws
from .compile_step import CompileSettings, compile_benchmark
from .definitions import CompileBenchmark, RunBenchmark, to_dict
from .resources import resource_for
from .run import summary, write
from .run_step import RunSettings, base_record, run_benchmark
from .suite import Suite

DIGEST_FILE = ".farm-artifact-sha256"
HOST_COMPILE_SHARE = 0.01  # of a device resource, taken by a host-arch compile (see compile_resources)


@dataclass(frozen=True)
class FarmOptions:
    address: str | None = None           # HOST:PORT of the head; None: a private one-node cluster here
    device_resources: dict[str, str] = field(default_factory=dict)  # device id -> resource (run --device-resource)
    device_wait_s: float = 60.0           # how long a run step waits for a worker with its resource
    max_retries: int = 3                  # re-runs of a task whose worker died
    artifact_limit_bytes: int = 1 << 30   # largest compiled project sent through the object store
    compile_cpus: float = 1.0             # Ray CPUs a compile task takes
    compile_anywhere: bool = False        # host-arch compiles need not run where their runs will
    env: dict[str, str] = field(default_factory=dict)  # set in every worker (SCCACHE_DIR ...)


# ------------------------------------------------------------------ on the workers
def _node_id() -> str | None:
    import ray
    return ray.get_runtime_context().get_node_id()


def _here(settings):
    """SETTINGS with this worker's tilegraph CLI (the head's path may not exist here)."""
    local = _common.find_tilegraph_bin()
    return dataclasses.replace(settings, tilegraph=local) if local else settings


def _compile_task(build: CompileBenchmark, settings: CompileSettings, build_project: bool,
                  limit: int) -> tuple[dict, bytes | None]:
    start = time.perf_counter()
    settings = _here(settings)
    try:
        record = compile_benchmark(build, settings, build_project)
    except Exception as e:  # noqa: BLE001 -- a suite bug becomes this step's status, as in a local run
        record = {"name": build.name, "status": f"failed: internal error: {type(e).__name__}: {e}"}
    record = {**record, "worker": devices.worker_info(_node_id())}
    artifact = None
    if res.is_ok(record) and record.get("built"):
        artifact = _pack(build, settings.work)
        if len(artifact) > limit:
            record["status"] = (f"failed: the compiled project is {len(artifact) >> 20} MiB, over the "
                                f"{limit >> 20} MiB object-store limit (--artifact-limit-mb)")
            artifact = None
        else:
            (ws.compile_prefix(build, settings.work) / DIGEST_FILE).write_text(_digest(artifact))
    record["farm_seconds"] = time.perf_counter() - start
    return record, artifact


def _run_task(bench: RunBenchmark, compile_record: dict, artifact: bytes | None, settings: RunSettings) -> dict:
    start = time.perf_counter()
    settings = _here(settings)
    try:
        if artifact is not None:
            _unpack(bench.build, settings.work, artifact)
        record = run_benchmark(bench, compile_record, settings)
    except Exception as e:  # noqa: BLE001
        record = {"name": bench.name, "status": f"failed: internal error: {type(e).__name__}: {e}"}
    return {**record, "worker": devices.worker_info(_node_id()), "farm_seconds": time.perf_counter() - start}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pack(build: CompileBenchmark, work: Path) -> bytes:
    """The compile prefix (and an exported model) as .tar.gz, paths relative to WORK."""
    buf = io.BytesIO()
    skip = {"CMakeFiles", DIGEST_FILE}
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        roots = [ws.compile_prefix(build, work)]
        if not build.model.onnx:
            roots.append(ws.model_onnx(build.model, work).parent)
        for root in roots:
            tar.add(root, arcname=str(root.relative_to(work)), filter=lambda t: None if Path(t.name).name in skip else t)
    return buf.getvalue()


def _unpack(build: CompileBenchmark, work: Path, artifact: bytes) -> None:
    """Puts the compiled project at its usual path under WORK unless the same one is there;
    a lock file keeps two runs of one project on this machine from unpacking at once."""
    prefix = ws.compile_prefix(build, work)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"{build.id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        digest = _digest(artifact)
        marker = prefix / DIGEST_FILE
        if marker.is_file() and marker.read_text() == digest:
            return
        shutil.rmtree(prefix, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(artifact), mode="r:gz") as tar:
            tar.extractall(work, filter="data")  # no absolute paths, links out or device files
        marker.write_text(digest)


# ------------------------------------------------------------------ on the head
class _Head:
    """Submits the suite's steps and gathers what they return."""

    def __init__(self, ray, suite: Suite, compile_settings: CompileSettings, run_settings: RunSettings,
                 options: FarmOptions, results: dict, out: Path, log: Callable[[str], None]):
        self.ray, self.suite, self.options, self.results, self.out, self.log = ray, suite, options, results, out, log
        self.compile_settings, self.run_settings = compile_settings, run_settings
        self.total = len(suite.compile_benchmarks) + len(suite.run_benchmarks)
        self.done = 0
        self.per_worker: Counter[str] = Counter()
        self.pending: dict = {}       # object ref -> (kind, benchmark, the custom resource it needs or None)
        self.waiting: list = []       # (run benchmark, resource, deadline): no worker has the resource yet
        self.compiled: dict = {}      # compile id -> (record ref, artifact ref)
        opts = {"max_retries": options.max_retries, "retry_exceptions": False}
        self.compile_remote = ray.remote(num_cpus=options.compile_cpus, num_returns=2, **opts)(_compile_task)
        self.run_remote = ray.remote(num_cpus=0, **opts)(_run_task)
        self.gone_since: dict[str, float] = {}  # resource -> when it was first seen missing

    def resources(self) -> dict:
        return self.ray.cluster_resources()

    def start(self) -> None:
        available = self.resources()
        for build in self.suite.compile_benchmarks:
            runs = [r for r in self.suite.run_benchmarks if r.build.id == build.id]
            # As in a local run: build only what some worker can run (or a compile-only benchmark).
            build_project = not runs or any(self.resource(r) in available for r in runs)
            needs = self.compile_resources(build, runs)
            record_ref, artifact_ref = self.compile_remote.options(resources=needs).remote(
                build, self.compile_settings, build_project, self.options.artifact_limit_bytes)
            self.compiled[build.id] = (record_ref, artifact_ref)
            self.pending[record_ref] = ("compile", build, next(iter(needs), None))
        deadline = time.monotonic() + self.options.device_wait_s
        for bench in self.suite.run_benchmarks:
            self.waiting.append((bench, self.resource(bench), deadline))
        self.place_waiting()

    def compile_resources(self, build: CompileBenchmark, runs: list[RunBenchmark]) -> dict:
        """A host-arch project is built for the CPU that compiles it (-march=native), so unless
        the workers' CPUs are alike (compile_anywhere) it compiles on a node with its runs'
        resource. A sliver of it, so compiles share the node, while a run (which takes all of
        it) waits until that node compiles nothing and times a quiet machine."""
        if build.compile.arch != "host" or self.options.compile_anywhere:
            return {}
        wanted = {self.resource(r) for r in runs}
        if len(wanted) != 1 or next(iter(wanted)) not in self.resources():
            return {}  # no single node kind to compile on, or none at all (the runs will be skipped)
        resource = next(iter(wanted))
        nodes = [n["Resources"] for n in self.ray.nodes() if n.get("Alive")]
        if not any(r.get(resource, 0) > 0 and r.get("CPU", 0) >= self.options.compile_cpus for r in nodes):
            # Pinning would wait forever (e.g. device workers started with --num-cpus 0).
            self.log(f"note: no node has both {resource!r} and a CPU to compile on: {build.name} compiles "
                     "on any node (its CPU must be like the run nodes')")
            return {}
        return {resource: HOST_COMPILE_SHARE}

    def resource(self, bench: RunBenchmark) -> str:
        return resource_for(bench.device, self.options.device_resources)

    def place_waiting(self) -> None:
        """Submits the run steps whose resource exists now; skips those whose wait is over."""
        available, now, still = self.resources(), time.monotonic(), []
        for bench, resource, deadline in self.waiting:
            if resource in available:
                record_ref, artifact_ref = self.compiled[bench.build.id]
                ref = self.run_remote.options(resources={resource: 1}).remote(
                    bench, record_ref, artifact_ref, self.run_settings)
                self.pending[ref] = ("run", bench, resource)
            elif now >= deadline:
                self.finish("run", bench, self.skipped(bench, resource))
            else:
                still.append((bench, resource, deadline))
        self.waiting = still

    def skipped(self, bench, resource: str, kind: str = "run") -> dict:
        status = f"skipped: no worker with resource {resource!r} (waited {self.options.device_wait_s:g} s)"
        if kind == "compile":
            return {"name": bench.name, "model": to_dict(bench.model), "compile_config": to_dict(bench.compile),
                    "tags": list(bench.model.tags), "status": status, "worker": None}
        return {**base_record(bench, self.run_settings), "status": status, "worker": None}

    def drop_orphans(self) -> None:
        """Steps queued for a resource no node offers any more (its workers left): after the
        same wait, cancelled and skipped, so the run ends."""
        available, now = self.resources(), time.monotonic()
        for ref, (kind, bench, resource) in list(self.pending.items()):
            if resource is None:
                continue
            if resource in available:
                self.gone_since.pop(resource, None)
                continue
            since = self.gone_since.setdefault(resource, now)
            if now - since >= self.options.device_wait_s:
                self.ray.cancel(ref, force=True)
                del self.pending[ref]
                self.finish(kind, bench, self.skipped(bench, resource, kind))

    def loop(self) -> None:
        while self.pending or self.waiting:
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=1.0) if self.pending else ([], [])
            for ref in ready:
                kind, bench, _ = self.pending.pop(ref)
                self.finish(kind, bench, self.fetch(ref, bench))
            self.place_waiting()
            self.drop_orphans()
            if not self.pending and self.waiting:
                time.sleep(0.5)

    def fetch(self, ref, bench) -> dict:
        try:
            return self.ray.get(ref)
        except Exception as e:  # noqa: BLE001 -- retries exhausted, cancelled, lost: this step's status
            reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return {"name": bench.name, "status": f"failed: ray: {type(e).__name__}: {reason[:300]}", "worker": None}

    def finish(self, kind: str, bench, record: dict) -> None:
        self.done += 1
        section = "compile" if kind == "compile" else "benchmarks"
        seconds = record.pop("farm_seconds", 0.0)  # the step's time on its worker (progress only)
        self.results[section][bench.id] = record
        worker = record.get("worker") or {}
        where = f"{worker.get('hostname')}/{(worker.get('node_id') or '')[:8]}" if worker else "-"
        self.per_worker[where] += 1
        self.log(f"[{self.done}/{self.total}] {kind} {bench.name} ({bench.id}) on {where} "
                 f"(#{self.per_worker[where]} there): {summary(record, seconds)}")
        write(self.results, self.out)


def run_suite_on_ray(suite: Suite, compile_settings: CompileSettings, run_settings: RunSettings, out: Path,
                     options: FarmOptions, preset: str = "",
                     log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> dict:
    """Runs SUITE on the cluster at OPTIONS.address; rewrites OUT as steps finish."""
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'ray==2.60.0' (or scripts/install_deps.sh)") from None
    overrides = {k: v for k, v in (("warmup", run_settings.warmup), ("iters", run_settings.iters)) if v is not None}
    results = res.new_results(preset, devices.machine_info(), compile_settings.work, overrides)
    runtime_env = {"env_vars": dict(options.env)} if options.env else None
    address = options.address or os.environ.get("RAY_ADDRESS")  # as Ray itself reads it
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
    else:
        from .resources import local_resources
        ray.init(resources=local_resources(), include_dashboard=False, runtime_env=runtime_env, log_to_driver=False)
    try:
        head = _Head(ray, suite, compile_settings, run_settings, options, results, out, log)
        start = time.perf_counter()
        head.start()
        head.loop()
        workers = ", ".join(f"{w}: {n}" for w, n in sorted(head.per_worker.items()))
        log(f"{head.total} steps in {time.perf_counter() - start:.1f} s; per worker: {workers}")
    finally:
        ray.shutdown()
    # The local run's order (suite order), whatever order the steps finished in.
    results["compile"] = {b.id: results["compile"][b.id] for b in suite.compile_benchmarks}
    results["benchmarks"] = {b.id: results["benchmarks"][b.id] for b in suite.run_benchmarks}
    write(results, out)
    return results
