"""A suite: the compile and run benchmarks one `run` executes, and its JSON form.

`export` writes a suite as a self-contained config file (every definition spelled
out, not just IDs), so a CI job can run a file exported by another commit, and a
shard can be handed to another machine. Reading a file recomputes every ID and
refuses a file whose stored IDs disagree: that means the file was edited by hand or
the ID rules changed, and either would silently break the history of a series.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from .definitions import (CompileBenchmark, CompileConfig, DeviceSpec, Model, RunBenchmark, RunConfig,
                          from_dict, to_dict)

SCHEMA = "tilegraph-bench-configs/1"


@dataclass(frozen=True)
class Suite:
    """Compile benchmarks (each compiled once) and the run benchmarks that use them.

    A compile benchmark no run benchmark uses is *compile-only*: it is there for its
    compile statistics (the comp-stats preset).
    """

    compile_benchmarks: tuple[CompileBenchmark, ...] = ()
    run_benchmarks: tuple[RunBenchmark, ...] = ()

    @staticmethod
    def of(runs: Iterable[RunBenchmark] = (), compiles: Iterable[CompileBenchmark] = ()) -> "Suite":
        """The suite of RUNS plus COMPILES, duplicates dropped, first appearance first."""
        runs = _unique(runs)
        builds = _unique([r.build for r in runs] + list(compiles))
        return Suite(tuple(builds), tuple(runs))

    def __add__(self, other: "Suite") -> "Suite":
        return Suite.of(self.run_benchmarks + other.run_benchmarks,
                        self.compile_benchmarks + other.compile_benchmarks)

    def used_compile_ids(self) -> set[str]:
        return {r.build.id for r in self.run_benchmarks}

    def only_models(self, model_ids: Iterable[str]) -> "Suite":
        keep = set(model_ids)
        return Suite.of([r for r in self.run_benchmarks if r.model.id in keep],
                        [c for c in self.compile_benchmarks if c.model.id in keep])

    def only_benchmarks(self, benchmark_ids: Iterable[str]) -> "Suite":
        """The run and compile benchmarks named (a run brings its compile benchmark along)."""
        keep = set(benchmark_ids)
        return Suite.of([r for r in self.run_benchmarks if r.id in keep],
                        [c for c in self.compile_benchmarks if c.id in keep])

    def shard(self, index: int, count: int) -> "Suite":
        """Shard INDEX of COUNT: compile benchmarks dealt round-robin in ID order, each
        with its run benchmarks, so no compile is repeated on two shards."""
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"shard {index} of {count}: need 0 <= shard < shards")
        ids = sorted(c.id for c in self.compile_benchmarks)
        mine = {cid for i, cid in enumerate(ids) if i % count == index}
        return Suite.of([r for r in self.run_benchmarks if r.build.id in mine],
                        [c for c in self.compile_benchmarks if c.id in mine])

    def find(self, benchmark_id: str) -> CompileBenchmark | RunBenchmark | None:
        for b in self.run_benchmarks + self.compile_benchmarks:
            if b.id == benchmark_id:
                return b
        return None


def _unique(items: Iterable) -> list:
    seen, out = set(), []
    for item in items:
        if item.id not in seen:
            seen.add(item.id)
            out.append(item)
    return out


# --------------------------------------------------------------------------- JSON form
def to_json(suite: Suite, preset: str = "", shard: tuple[int, int] = (0, 1)) -> dict:
    return {
        "schema": SCHEMA,
        "preset": preset,
        "shard": {"index": shard[0], "count": shard[1]},
        "compile_benchmarks": [
            {"id": c.id, "name": c.name, "model": to_dict(c.model), "compile": to_dict(c.compile)}
            for c in suite.compile_benchmarks],
        "run_benchmarks": [
            {"id": r.id, "name": r.name, "compile_id": r.build.id, "run": to_dict(r.run),
             "device": to_dict(r.device)}
            for r in suite.run_benchmarks],
    }


def from_json(data: dict) -> Suite:
    """The suite of a config file's dict; ValueError names what is wrong."""
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not a benchmark config file (schema {data.get('schema')!r}, expected {SCHEMA!r})")
    builds = {}
    for entry in data.get("compile_benchmarks", []):
        c = CompileBenchmark(from_dict(Model, entry["model"]), from_dict(CompileConfig, entry["compile"]))
        _check_id(entry, c.id)
        builds[c.id] = c
    runs = []
    for entry in data.get("run_benchmarks", []):
        build = builds.get(entry.get("compile_id"))
        if build is None:
            raise ValueError(f"run benchmark {entry.get('id')!r}: compile benchmark "
                             f"{entry.get('compile_id')!r} is not in the file")
        r = RunBenchmark(build, from_dict(RunConfig, entry["run"]), from_dict(DeviceSpec, entry["device"]))
        _check_id(entry, r.id)
        runs.append(r)
    return Suite.of(runs, builds.values())


def _check_id(entry: dict, computed: str) -> None:
    if entry.get("id") != computed:
        raise ValueError(f"benchmark {entry.get('name', '?')!r}: the file says ID {entry.get('id')!r} but its "
                         f"definition hashes to {computed!r} (edited by hand, or the ID rules changed)")


def load(path) -> Suite:
    with open(path) as f:
        return from_json(json.load(f))
