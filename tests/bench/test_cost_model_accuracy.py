"""benchmarks/cost_model_accuracy.py's ratios on hand-made profiles: the plain top-1 / best over
all repeats, and the held-out one (the best chosen on some repeats, timed on the others)."""
import importlib.util
import json
import statistics
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cost_model_accuracy.py"
spec = importlib.util.spec_from_file_location("cost_model_accuracy", SCRIPT)
cma = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cma)


def test_top1_over_best_divides_by_the_fastest_measured():
    assert cma.top1_over_best([2.0, 1.0, 4.0]) == pytest.approx(2.0)
    assert cma.top1_over_best([1.0, 0.0, 3.0]) == pytest.approx(1.0)  # 0: not measured
    assert cma.top1_over_best([0.0, 1.0]) is None


def test_held_out_ratio_chooses_on_even_repeats_and_times_on_odd_ones():
    # Candidate 1 is fast on repeats 0 and 2 only (noise); on repeats 1 and 3 the top-1 is
    # as fast as any. Over all four repeats its median still wins (the winner's curse).
    per_run = [[1.0, 0.80, 1.20],
               [1.0, 1.10, 0.90],
               [1.0, 0.80, 1.30],
               [1.0, 1.05, 0.95]]
    plain = cma.top1_over_best([statistics.median(ts) for ts in zip(*per_run)])
    assert plain == pytest.approx(1.0 / 0.925)
    # chosen on repeats 0, 2: candidate 1 (0.8); timed on 1, 3: 1.0 / 1.075
    assert cma.held_out_ratio(per_run) == pytest.approx(1.0 / 1.075)


def test_held_out_ratio_needs_two_repeats():
    assert cma.held_out_ratio([[1.0, 0.5]]) is None
    # two repeats: chosen on the first, timed on the second
    assert cma.held_out_ratio([[1.0, 0.5, 0.7], [1.0, 0.9, 0.6]]) == pytest.approx(1.0 / 0.9)


def test_summary_counts_the_ratios_within_ten_percent():
    assert cma.summary([1.0, 1.05, 1.2, 1.5]) == "4 kernels, geomean top-1/best 1.173, within 10%: 50%"
    assert cma.summary([]) == "no profiled kernels"


def test_rescore_scores_the_current_picks_against_the_saved_times(monkeypatch, capsys, tmp_path):
    saved = {"m.onnx": [
        {"kernel": "k1", "configs": ["a", "b", "c"], "measured_ms": [2.0, 1.0, 4.0], "top1_over_best": 2.0},
        {"kernel": "k2", "configs": ["x", "y"], "measured_ms": [1.0, 1.5], "top1_over_best": 1.0},
        {"kernel": "k3", "configs": ["p", "q"], "measured_ms": [1.0, 1.1], "top1_over_best": 1.0},
        {"kernel": "k4", "configs": ["r"], "measured_ms": [1.0], "top1_over_best": 1.0},
    ]}
    monkeypatch.setattr(cma, "prepare", lambda model, work: Path(work) / model)
    # k1 now picks the fastest, k2 the slower one, k3 a config that was not profiled; k4 is gone.
    monkeypatch.setattr(cma, "current_picks", lambda tg, prefix, arch: {"k1": "b", "k2": "y", "k3": "z"})
    cma.rescore("tilegraph", saved, tmp_path, None)
    out = capsys.readouterr().out
    assert "1.000  k1: b  (was a: 2.000)" in out
    assert "1.500  k2: y  (was x: 1.000)" in out
    assert "k3: now z, not profiled" in out
    assert "k4: now not a kernel (fused otherwise), not profiled" in out
    assert "all: 2 kernels, geomean top-1/best 1.225, within 10%: 50%; 2 unscored" in out


TILEGRAPH = Path(__file__).resolve().parents[2] / "build" / "bin" / "tilegraph"


@pytest.mark.skipif(not TILEGRAPH.exists(), reason="tilegraph is not built")
def test_one_thread_runs_are_priced_with_the_built_in_spec_for_one_core(tmp_path, capsys):
    # A spec of the machine's cores would charge a one-tile candidate for cores a one-thread
    # run does not have.
    spec = Path(cma.spec_for_threads(str(TILEGRAPH), 1, tmp_path / "work"))
    written = json.loads(spec.read_text())
    assert spec.parent == tmp_path / "work"
    assert written["name"] == "host" and written["compute_units"] == 1
    assert "built-in host spec for 1 core" in capsys.readouterr().out
