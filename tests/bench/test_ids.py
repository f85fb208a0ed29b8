"""Benchmark IDs: fixed values, stable across processes, unmoved by new optional fields.

The expected IDs below are hard-coded on purpose. If one of these tests fails after a
change, every dashboard series and every `compare` against older results has just
been cut: undo the change, or, if a new ID is really meant, say so in the commit.
"""

import dataclasses
import json
import subprocess
import sys

import onnx
import pytest

from bench_testlib import REPO, subprocess_env
from tilegraph.bench import catalog, presets
from tilegraph.bench import suite as suite_file
from tilegraph.bench.definitions import (CompileBenchmark, CompileConfig, DeviceSpec, Model, RunBenchmark, RunConfig,
                                         from_dict, to_dict)
from tilegraph.bench.ids import stable_hash

MODELS = {m.id: m for m in catalog.SMALL_MODELS + catalog.LARGE_MODELS + catalog.LARGE_GPU_MODELS}


def run_bench(model, compile_config, run_config, device):
    return RunBenchmark(CompileBenchmark(MODELS[model], compile_config), run_config, device)


EXPECTED = {
    "c-5fbc824b799e": lambda: CompileBenchmark(MODELS["bert_small"], catalog.HOST),
    "c-306b4d020b8a": lambda: CompileBenchmark(MODELS["mobilenet_small"], catalog.HOST),
    "c-678a0780ea5e": lambda: CompileBenchmark(MODELS["mobilenet_small"], catalog.HOST_NO_FUSION),
    "r-34bb379e5db5": lambda: run_bench("bert_small", catalog.HOST, catalog.CPU_1T, catalog.LOCAL_CPU),
    "r-75aa03b67bac": lambda: run_bench("bert_small", catalog.HOST, catalog.CPU_ALL, catalog.LOCAL_CPU),
    "r-39c34257f8d5": lambda: run_bench("bert_small", catalog.H100, catalog.GPU, catalog.LOCAL_GPU),
    "r-098971b7ed17": lambda: run_bench("bert_bs1_fp16", catalog.H100, catalog.GPU, catalog.LOCAL_GPU),
    "r-1e44b43f856c": lambda: run_bench("NeRF_small", catalog.NEOVERSE_N2, catalog.ARM64_1T, catalog.ARM64),
}


@pytest.mark.parametrize("expected", sorted(EXPECTED))
def test_ids_are_the_hard_coded_ones(expected):
    assert EXPECTED[expected]().id == expected


def test_hash_is_sha256_of_kind_and_parts():
    assert stable_hash("compile", ["bert_small", "host"]) == "5fbc824b799e"
    assert stable_hash("compile", ["host", "bert_small"]) != "5fbc824b799e"  # the order is part of it


def test_ids_are_the_same_in_another_process():
    """No dependence on Python's per-process salted hash() or on dict order."""
    here = {r.id: r.name for r in presets.everything().run_benchmarks}
    code = ("import json; from tilegraph.bench import presets; "
            "print(json.dumps({r.id: r.name for r in presets.everything().run_benchmarks}))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                             env=subprocess_env(PYTHONHASHSEED=seed))
        assert json.loads(out.stdout) == here


def test_a_new_optional_field_at_its_default_keeps_the_id():
    base = EXPECTED["r-34bb379e5db5"]()
    # A future version of RunBenchmark with one more optional field.
    Extended = dataclasses.make_dataclass("RunBenchmark", [("profile", bool, dataclasses.field(default=False))],
                                          bases=(RunBenchmark,), frozen=True)
    assert Extended(base.build, base.run, base.device).id == "r-34bb379e5db5"
    assert Extended(base.build, base.run, base.device, profile=True).id != "r-34bb379e5db5"

    ExtendedBuild = dataclasses.make_dataclass("CompileBenchmark", [("pgo", str, dataclasses.field(default=""))],
                                               bases=(CompileBenchmark,), frozen=True)
    assert ExtendedBuild(MODELS["bert_small"], catalog.HOST).id == "c-5fbc824b799e"
    assert ExtendedBuild(MODELS["bert_small"], catalog.HOST, pgo="on").id != "c-5fbc824b799e"


def test_files_written_before_a_field_existed_still_load():
    old = to_dict(catalog.HOST)
    del old["emulate"]  # as if written before CompileConfig.emulate existed
    assert from_dict(CompileConfig, old) == catalog.HOST
    with pytest.raises(ValueError, match="unknown fields"):
        from_dict(CompileConfig, {**to_dict(catalog.HOST), "no_such_field": 1})


def test_names_and_descriptions_do_not_change_ids():
    b = EXPECTED["r-34bb379e5db5"]()
    renamed = RunBenchmark(
        CompileBenchmark(dataclasses.replace(b.model, name="BERT tiny", tags=("x",)), b.build.compile),
        dataclasses.replace(b.run, name="single thread"), dataclasses.replace(b.device, description="mine"))
    assert renamed.id == b.id and renamed.name != b.name


def test_every_part_counts():
    b = EXPECTED["r-34bb379e5db5"]()
    variants = [
        RunBenchmark(CompileBenchmark(MODELS["mobilenet_small"], b.build.compile), b.run, b.device),
        RunBenchmark(CompileBenchmark(b.model, catalog.HOST_NO_FUSION), b.run, b.device),
        RunBenchmark(b.build, catalog.CPU_ALL, b.device),
        RunBenchmark(b.build, b.run, catalog.ARM64),
    ]
    assert len({v.id for v in variants} | {b.id}) == 5


def test_readable_names():
    m = Model(id="bert_bs1_fp16", name="bert_bs1_fp16")
    cc = CompileConfig(id="h100-fp16", arch="H100", flags=("--fp16",))
    bench = RunBenchmark(CompileBenchmark(m, cc), RunConfig(id="gpu"), DeviceSpec(id="d", name="local", kind="cuda"))
    assert bench.name == "bert_bs1_fp16 [H100][fp16,topk20] @ local"
    assert EXPECTED["r-34bb379e5db5"]().name == "bert_small [host][topk20] @ local (1 thread)"
    assert EXPECTED["c-678a0780ea5e"]().name == "mobilenet_small [host][no-fusion,topk20]"


def test_leaf_ids_are_unique_in_the_catalog():
    """Two different leaves with one ID would merge two benchmarks' histories."""
    suite = presets.everything()
    leaves = {}
    for r in suite.run_benchmarks:
        for leaf in (r.model, r.build.compile, r.run, r.device):
            seen = leaves.setdefault((type(leaf).__name__, leaf.id), leaf)
            assert seen == leaf, f"two different {type(leaf).__name__}s share the ID {leaf.id!r}"
    ids = [b.id for b in suite.run_benchmarks + suite.compile_benchmarks]
    assert len(ids) == len(set(ids))


def test_config_files_round_trip_and_refuse_wrong_ids():
    suite = presets.everything()
    data = json.loads(json.dumps(suite_file.to_json(suite, "everything")))
    assert suite_file.from_json(data) == suite
    data["run_benchmarks"][0]["run"]["id"] = "cpu-7t"  # edited by hand: the stored ID no longer matches
    with pytest.raises(ValueError, match="hashes to"):
        suite_file.from_json(data)


def test_shards_partition_the_suite():
    whole = presets.preset("all")
    shards = [whole.shard(k, 3) for k in range(3)]
    compile_ids = [c.id for s in shards for c in s.compile_benchmarks]
    run_ids = [r.id for s in shards for r in s.run_benchmarks]
    assert sorted(compile_ids) == sorted(c.id for c in whole.compile_benchmarks)
    assert sorted(run_ids) == sorted(r.id for r in whole.run_benchmarks)
    for s in shards:  # each run travels with its compile benchmark
        assert s.used_compile_ids() <= {c.id for c in s.compile_benchmarks}
        assert abs(len(s.compile_benchmarks) - len(whole.compile_benchmarks) / 3) <= 1


def test_presets_exist_and_are_what_they_say():
    for name in presets.PRESETS:
        assert presets.preset(name).compile_benchmarks, name
    assert {r.device.kind for r in presets.preset("x86_64").run_benchmarks} == {"cpu"}
    assert {r.device.kind for r in presets.preset("cuda").run_benchmarks} == {"cuda"}
    assert {r.device.kind for r in presets.preset("arm64").run_benchmarks} == {"arm64"}
    assert not presets.preset("comp-stats").run_benchmarks
    assert all("large" in r.model.tags for r in presets.preset("large").run_benchmarks)


def test_cpu_float_preset_tracks_both_exports_at_one_and_two_threads():
    runs = presets.preset("cpu-float").run_benchmarks
    assert {r.run.threads for r in runs} == {1, 2}
    assert {r.device.kind for r in runs} == {"cpu"}
    by_id = {r.model.id: r.model for r in runs}
    assert {"resnet50_bs1", "resnet50_bs1_opset17", "mobilenet_bs1", "mobilenet_bs1_opset17"} <= set(by_id)
    assert by_id["resnet50_bs1_opset17"].export_flags()[-3:] == ["--opset", "17", "--constant-folding"]
    assert "--opset" not in by_id["resnet50_bs1"].export_flags()  # Welder's settings: the defaults
    # the opset field is new and optional: the models that existed before keep their IDs
    assert by_id["bert_bs1"].id == MODELS["bert_bs1"].id and by_id["bert_bs1"] == MODELS["bert_bs1"]


@pytest.mark.parametrize("model", catalog.SMALL_MODELS, ids=lambda m: m.id)
def test_committed_models_declare_their_real_inputs(model):
    """The inputs in the catalog are documentation; this keeps them true."""
    kinds = {1: "f32", 7: "i64", 6: "i32", 10: "f16"}
    m = onnx.load(str(REPO / model.onnx), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    actual = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        dims = "x".join(str(d.dim_value) for d in vi.type.tensor_type.shape.dim)
        actual.append(f"{vi.name}={dims}x{kinds[vi.type.tensor_type.elem_type]}")
    assert tuple(actual) == model.inputs
