"""Checks of the committed model exports (models/) that need no compiler:
onnx.checker, onnxruntime runs on test_acc's inputs, metadata, size budget, README."""
import json

import numpy as np
import onnx
import pytest

from conftest import REPO
from tilegraph.inputs import generate_inputs, load_input_ranges, model_inputs
from tilegraph.test_acc import run_onnxruntime

MODELS_DIR = REPO / "models"
WELDER_SET = ["bert", "vit", "swin_transformer", "mobilenet", "mobilevit", "NAFNet", "BSRN",
              "Restormer", "Conformer", "NeRF"]
# Table 6-7 CNNs (own small definitions: tilegraph.models.resnet18 / vgg / unet)
CNN_SET = ["resnet18", "vgg16", "unet"]
EXPECTED = [f"{m}_small" for m in WELDER_SET + CNN_SET] + ["bert_small_opset17", "vit_small_opset17", "bert_small_fp16"]
MODEL_NAMES = sorted(d.name for d in MODELS_DIR.iterdir()
                     if (d / "model.onnx").is_file()) if MODELS_DIR.is_dir() else []
SIZE_BUDGET = 5 * 1024 * 1024


def test_expected_models_present():
    assert sorted(EXPECTED) == MODEL_NAMES


def test_total_size_within_budget():
    # the committed files only (tilegraph_rt/ and test_acc/ from in-place runs are ignored)
    files = [f for f in MODELS_DIR.glob("*/*") if f.is_file()] + [MODELS_DIR / "README.md"]
    total = sum(f.stat().st_size for f in files)
    assert total < SIZE_BUDGET, f"models/ is {total / 2**20:.2f} MiB"


def test_readme_lists_every_model():
    text = (MODELS_DIR / "README.md").read_text()
    for name in MODEL_NAMES:
        assert f"`{name}`" in text
        info = json.loads((MODELS_DIR / name / "export.json").read_text())
        assert info["command"] in text, f"README lacks the command that regenerates {name}"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_checks_and_runs(name):
    prefix = MODELS_DIR / name
    info = json.loads((prefix / "export.json").read_text())
    model = onnx.load(str(prefix / "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    opset = {o.domain: o.version for o in model.opset_import}[""]
    assert opset == info["opset"]
    specs = model_inputs(prefix / "model.onnx")
    ranges = load_input_ranges(prefix)
    for s in specs:
        if s.dtype.kind in "iu":
            assert s.name in ranges, f"{name}: integer input {s.name} has no input_ranges.json entry"
        assert all(isinstance(d, int) for d in s.shape), f"{name}: {s.name} not static"
    feed = generate_inputs(specs, 0, ranges)
    outs = run_onnxruntime(prefix / "model.onnx", feed)
    assert outs
    for k, v in outs.items():
        assert v.size > 0 and np.isfinite(v.astype(np.float64)).all(), f"{name}: {k} not finite"
