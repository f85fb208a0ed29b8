"""Damaged caches are ignored with a warning naming the file, never fatal.

schedule_cache.json and profile_cache.json live in the project folder; a
truncated write, a hand edit or another tool can leave them broken. tune must
warn, start cold, produce the same project as a cold tune, and rewrite them.
"""
import json
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from security_cli import REPO, TILEGRAPH, save, tg

pytestmark = pytest.mark.skipif(not os.path.exists(TILEGRAPH), reason="tilegraph is not built")


def small_model():
    w = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def tuned(prefix, *flags):
    r = tg("tune", prefix, "--no-build", *flags)
    assert r.returncode == 0, r.stderr
    return r


def assert_warned(result, which, arch):
    """The warning names the cache file: the project's, in the folder tune stages it in."""
    staged = f"tilegraph_rt/.{arch}.next/{which}_cache.json"
    assert f"warning: ignoring the damaged {which} cache '" in result.stderr, result.stderr
    assert staged in result.stderr, result.stderr


DAMAGE = {
    "truncated": lambda text: text[: len(text) // 2],
    "not json": lambda text: "\x00\x01garbage",
    "wrong types": lambda text: json.dumps({"format": json.loads(text)["format"],
                                            "entries": {"1": {"feasible": "yes", "top": 3}}}),
    "bad key": lambda text: json.dumps({"format": json.loads(text)["format"], "entries": {"k": {}}}),
    "negative tile": lambda text: text.replace('"tile":[', '"tile":[-7,', 1).replace('"tile": [', '"tile": [-7, ', 1),
}


@pytest.mark.parametrize("arch", ["host", "A100"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_schedule_cache(tmp_path, arch, damage):
    prefix = save(small_model(), tmp_path / "m")
    tuned(prefix, "--arch", arch)
    project = prefix / "tilegraph_rt" / arch
    cache = project / "schedule_cache.json"
    good_model = (project / ("model.cpp" if arch == "host" else "model.cu")).read_bytes()
    good_cache = cache.read_text()
    cache.write_text(DAMAGE[damage](good_cache))
    r = tuned(prefix, "--arch", arch)
    assert_warned(r, "schedule", arch)
    assert (project / ("model.cpp" if arch == "host" else "model.cu")).read_bytes() == good_model
    assert json.loads(cache.read_text()) == json.loads(good_cache)  # rewritten whole
    r = tuned(prefix, "--arch", arch)
    assert "warning" not in r.stderr


def test_mismatched_tile_rank_is_searched_again(tmp_path):
    """A well-formed entry whose tiles cannot belong to the kernel is a miss, not a crash."""
    prefix = save(small_model(), tmp_path / "m")
    tuned(prefix, "--arch", "A100")
    project = prefix / "tilegraph_rt" / "A100"
    cache = project / "schedule_cache.json"
    good_model = (project / "model.cu").read_bytes()
    j = json.loads(cache.read_text())
    for entry in j["entries"].values():
        for top in entry["top"]:
            top["config"]["tile"] = top["config"]["tile"] + [1, 1, 1]
    cache.write_text(json.dumps(j))
    r = tuned(prefix, "--arch", "A100")
    assert "hits" in r.stderr and " 0 hits" in r.stderr, r.stderr
    assert (project / "model.cu").read_bytes() == good_model


def test_damaged_profile_cache(tmp_path):
    """profile_cache.json with entries of the wrong shape: warned about, profiled again."""
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models" / "bert_small" / "model.onnx", prefix / "model.onnx")
    flags = ("--profile-topk", "on", "--topk", "2")
    r = tg("tune", prefix, *flags)
    assert r.returncode == 0, r.stderr
    cache = prefix / "tilegraph_rt" / "host" / "profile_cache.json"
    j = json.loads(cache.read_text())
    assert j["entries"], "nothing was profiled: the test needs a kernel with two candidates"
    for entry in j["entries"].values():
        entry["seconds"] = "fast"
    cache.write_text(json.dumps(j))
    r = tg("tune", prefix, *flags)
    assert r.returncode == 0, r.stderr
    assert_warned(r, "profile", "host")
    assert all(isinstance(e["seconds"], list) for e in json.loads(cache.read_text())["entries"].values())
