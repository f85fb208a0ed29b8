"""Names and strings from a model never become generated code.

A property test over hostile models: every node, value, initializer, graph name
and doc string carries a unique marker inside text built to escape a `//`
comment or a string literal (newlines, a trailing backslash, quotes, `*/`,
trigraphs, `#include`, non-ASCII and control bytes). After `tune --no-build`
for the host and for a GPU arch with its CPU emulation, no marker may appear in
any generated source outside a comment or a literal, and the C++ sources must
still compile (`g++ -fsyntax-only`). One model is also built and run end to
end. TG_NAME_FUZZ_CASES sets how many random models (default 6; the fuzzing
stage of scripts/test.sh runs more).
"""
import os
import random
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from c_source_scan import code_only
from security_cli import TILEGRAPH, save, tg

pytestmark = pytest.mark.skipif(not os.path.exists(TILEGRAPH), reason="tilegraph is not built")

MARK = "TGPWN"
# Pieces that end a comment or a literal, or start a directive, in some context.
ESCAPES = ["\n", "\r\n", "\\", "\\\n", "*/", "/*", '"', "'", "??/", "\n#include </etc/hostname>\n",
           "\n#error boom\n", "\n}\n", "\u2028", "\x1b[2J", "\t", "é", "$(touch x)", "`id`", "%s%n"]
CASES = int(os.environ.get("TG_NAME_FUZZ_CASES", "6"))


def hostile(rng, serial):
    """A name carrying marker MARK<serial> between escape attempts; unique by serial."""
    parts = [rng.choice(ESCAPES) for _ in range(rng.randint(1, 3))]
    code = f"int {MARK}{serial} = 1; static void {MARK}f{serial}() {{}}"
    return "".join(parts) + code + rng.choice(ESCAPES)


def hostile_model(seed, with_gather=True):
    """x -> MatMul(W) -> Add(B) -> Relu -> Softmax -> y, and Gather(table, ids) -> z
    (a runtime index: random inputs may be out of range, so optional); every name and
    doc string hostile."""
    rng = random.Random(seed)
    serial = iter(range(10_000))
    name = lambda: hostile(rng, next(serial))  # noqa: E731
    x, w, b, t1, t2, t3, y = (name() for _ in range(7))
    table, ids, z = name(), name(), name()
    nodes = [
        helper.make_node("MatMul", [x, w], [t1], name=name(), doc_string=name()),
        helper.make_node("Add", [t1, b], [t2], name=name()),
        helper.make_node("Relu", [t2], [t3], name=name()),
        helper.make_node("Softmax", [t3], [y], name=name(), axis=-1),
    ]
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 4])]
    outputs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, [2, 4])]
    if with_gather:
        nodes.append(helper.make_node("Gather", [table, ids], [z], name=name(), axis=0))
        inputs.append(helper.make_tensor_value_info(ids, TensorProto.INT64, [3]))
        outputs.append(helper.make_tensor_value_info(z, TensorProto.FLOAT, [3, 2]))
    init = [numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), w),
            numpy_helper.from_array(np.arange(4, dtype=np.float32), b),
            numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(6, 2), table)][:3 if with_gather else 2]
    graph = helper.make_graph(nodes, name(), inputs, outputs, init, doc_string=name())
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], doc_string=name())
    model.producer_name = name()
    return model


def generated_sources(project):
    return [p for p in project.rglob("*") if p.is_file() and p.suffix in (".cpp", ".h", ".cu", ".txt", ".cmake")]


def assert_no_marker_in_code(project):
    sources = generated_sources(project)
    assert any(p.name == "model.cpp" or p.name == "model.cu" for p in sources), project
    for path in sources:
        text = path.read_text(errors="replace")
        code = code_only(text) if path.suffix in (".cpp", ".h", ".cu") else text
        assert MARK not in code, f"model text escaped into code in {path}"


def syntax_check(project):
    cpp = [p for p in project.glob("*.cpp")]
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-fopenmp", "-w", f"-I{project}", *map(str, cpp)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("seed", range(CASES))
def test_hostile_names_stay_in_comments_and_literals(tmp_path, seed):
    prefix = save(hostile_model(seed), tmp_path / "m")
    for arch in (["--arch", "host"], ["--arch", "A100", "--emulate"]):
        r = tg("tune", prefix, *arch, "--no-build")
        assert r.returncode == 0, r.stderr
    rt = prefix / "tilegraph_rt"
    for project in (rt / "host", rt / "A100", rt / "A100" / "emulation"):
        assert_no_marker_in_code(project)
    syntax_check(rt / "host")
    syntax_check(rt / "A100" / "emulation")


def test_code_only_blanks_what_the_lexer_would():
    text = ('a // c \\\n still comment\nb /* x\n y */ c "s\\"t" \'q\' '
            'R"d(raw " )" )d" e')
    assert code_only(text).split() == ["a", "b", "c", "e"]


def test_hostile_names_build_and_run(tmp_path):
    """Built for real: the library loads, runs, and names its outputs after the escaped names."""
    model = hostile_model(1234, with_gather=False)
    prefix = save(model, tmp_path / "m")
    r = tg("tune", prefix)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = tg("run", prefix, "--iters", "1", "--warmup", "0", "--outputs", out)
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 1
    for f in files:  # NAME.npy, characters outside [A-Za-z0-9_.-] replaced
        assert all(c.isalnum() or c in "_.-" for c in f), f
    assert not list(tmp_path.rglob("x")), "a name's $(touch x) ran"
    shutil.rmtree(prefix / "tilegraph_rt")
