"""The artifacts' shared pieces on their own: report sections, CSV cells, charts,
machine detection. Fast; no model is compiled."""
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "artifacts"))

from common import charts, gpu_only, report, tables  # noqa: E402
from common.machine import Machine, detect  # noqa: E402


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTIFACTS_OUT", str(tmp_path))
    return tmp_path


def test_rewriting_a_section_replaces_it_and_keeps_the_others(out):
    report.start("test")
    report.write_section("a", "A", paper="p", body="first", chart=None, csv=None)
    report.write_section("b", "B", paper="p", body="other", chart=None, csv=None, skipped=[("col", "why")])
    report.write_section("a", "A", paper="p", body="second", chart=None, csv=None)
    text = (out / "report.md").read_text()
    assert "second" in text and "first" not in text and "other" in text
    assert text.count("<!-- section: a -->") == 1
    assert "- skipped: col: why" in text
    assert text.index("<!-- section: a -->") < text.index("<!-- section: b -->")


def test_csv_cells_and_geomean(out):
    path = tables.write_csv(out / "t.csv", ["x", "y", "z"], [{"x": 1.5, "y": None}, {"x": float("nan"), "z": "s"}])
    assert path.read_text().splitlines() == ["x,y,z", "1.5,,", ",,s"]
    assert tables.geomean([1, 4, None, 0, float("inf")]) == pytest.approx(2.0)
    assert math.isnan(tables.geomean([]))


def test_chart_picks_a_log_scale_for_wide_ranges(out, monkeypatch):
    scales = []
    monkeypatch.setattr(charts.plt.Axes, "set_yscale", lambda self, s: scales.append(s))
    charts.bars(out / "narrow.png", ["a", "b"], {"x": [1.0, 2.0], "y": [1.5, None]}, ylabel="ms", title="t")
    assert scales == []
    charts.bars(out / "wide.png", ["a", "b"], {"x": [0.01, 2.0], "y": [1.5, None]}, ylabel="ms", title="t")
    assert scales == ["log"]
    assert (out / "wide.png").read_bytes()[:4] == b"\x89PNG"


def test_missing_columns_name_their_reason():
    bare = Machine(cpu="c", cores=2)
    assert "no NVIDIA GPU" in bare.missing("gpu")
    assert "onnxruntime" in bare.missing("onnxruntime")
    assert "PyTorch" in bare.missing("torch-cuda")
    assert "trtexec" in bare.missing("trtexec")
    full = Machine(cpu="c", cores=2, gpus=["H200, 550, 141 GiB"], onnxruntime="1", torch="2", torch_cuda=True,
                   trtexec="/usr/bin/trtexec")
    assert all(full.missing(n) is None for n in ("gpu", "onnxruntime", "torch", "torch-cuda", "trtexec"))
    assert detect().cores >= 1  # the host CPU is always there


def test_a_gpu_only_section_takes_title_and_quote_from_the_table(out, monkeypatch):
    assert {"fig10", "fig11", "table7"} <= set(gpu_only.EXPERIMENTS)
    monkeypatch.setattr(gpu_only, "detect", lambda: Machine(cpu="c", cores=2))
    assert gpu_only.skip_experiment("table7", needs=[("UNet beyond the GPU's memory", "gpu")],
                                    not_yet=[("tier", "not yet")])
    text = (out / "report.md").read_text()
    e = gpu_only.EXPERIMENTS["table7"]
    assert f"## {e.title}" in text and f"Paper: {e.paper}" in text
    assert "- skipped: UNet beyond the GPU's memory: no NVIDIA GPU" in text and "- skipped: tier: not yet" in text
    # everything present and nothing pending: the caller measures, no section is written
    monkeypatch.setattr(gpu_only, "detect", lambda: Machine(cpu="c", cores=2, gpus=["H200"]))
    assert not gpu_only.skip_experiment("fig10", needs=[("x", "gpu")])
    assert "<!-- section: fig10 -->" not in (out / "report.md").read_text()
