"""`tilegraph calibrate` and `tune --arch-file`: a measured host spec, within sane
bounds, that tune loads and the cost model uses (explain shows its numbers)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args, timeout=600):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate") / "host.json"
    r = tg("calibrate", "--arch", "host", "--cores", "1", "-o", out, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stderr and "--arch-file" in r.stderr
    return json.loads(out.read_text()), out, r.stderr


def level(spec, name):
    return next(l for l in spec["levels"] if l["name"] == name)


def test_calibrated_numbers_are_sane(calibrated):
    spec, _, log = calibrated
    assert spec["name"] == "host" and spec["target"] == "cpu" and spec["compute_units"] == 1
    assert "calibrated on 1 core" in spec["description"]
    assert [l["name"] for l in spec["levels"]][0] == "dram"
    # One core of any machine this runs on: 0.1 GB/s .. 10 TB/s, 0.1 .. 100k GFLOP/s.
    for name in ("dram", "l2", "l1"):
        assert 1e8 < level(spec, name)["bandwidth_bytes_per_s"] < 1e13, name
    assert 1e8 < spec["peak_fp32_flops"] < 1e14
    assert 1e8 < spec["peak_int8_ops"] < 1e15
    # A region on one core: no thread to wake, at most a scheduler slice.
    assert 1e-9 < spec["kernel_launch_seconds"] < 0.1
    assert 0 <= spec["parallel_region_seconds"] < 0.1
    assert 0 < spec["block_overhead_seconds"] < 1e-3
    # The summary names the micro-kernels it timed.
    assert "sgemm_" in log and "qgemm_" in log and "micro-kernel" in log


def test_tune_uses_the_calibrated_spec(calibrated, tmp_path):
    spec, path, _ = calibrated
    prefix = tmp_path / "nerf"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    assert tg("tune", prefix, "--no-build").returncode == 0
    default = json.loads(tg("explain", prefix, "--json").stdout)
    r = tg("tune", prefix, "--no-build", "--arch-file", path)
    assert r.returncode == 0, r.stderr
    assert "1 cores" in r.stderr  # the schedule step names the spec's compute units
    e = json.loads(tg("explain", prefix, "--json").stdout)
    assert e["arch"] == "host"
    s = e["arch_spec"]
    assert s["peak_fp32_flops"] == spec["peak_fp32_flops"]
    assert s["dram_bandwidth_bytes_per_s"] == level(spec, "dram")["bandwidth_bytes_per_s"]
    assert s["kernel_launch_seconds"] == spec["kernel_launch_seconds"]
    assert s["compute_units"] == 1 and "calibrated" in s["description"]
    assert default["arch_spec"]["compute_units"] == os.cpu_count()
    # Every kernel pays the calibrated call overhead at least.
    assert all(k["predicted_ms"] >= spec["kernel_launch_seconds"] * 1e3 for k in e["subgraphs"])
    text = tg("explain", prefix).stdout
    assert "calibrated on 1 core" in text and "peak fp32" in text


def test_arch_file_errors_are_one_line(calibrated, tmp_path):
    spec, path, _ = calibrated
    prefix = tmp_path / "m"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    r = tg("tune", prefix, "--no-build", "--arch-file", tmp_path / "missing.json")
    assert r.returncode == 1 and "missing.json" in r.stderr and "cannot open" in r.stderr
    r = tg("tune", prefix, "--no-build", "--arch", "H100", "--arch-file", path)
    assert r.returncode == 1 and "describes host, not --arch H100" in r.stderr
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(dict(spec, name="my-box")))
    r = tg("tune", prefix, "--no-build", "--arch-file", renamed)
    assert r.returncode == 1 and '"my-box" is not a known arch' in r.stderr
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(dict(spec, peak_fp32_flops=-1)))
    r = tg("tune", prefix, "--no-build", "--arch-file", broken)
    assert r.returncode == 1 and "broken.json" in r.stderr and "peak_fp32_flops" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_calibrate_is_for_the_host(tmp_path):
    r = tg("calibrate", "--arch", "H100")
    assert r.returncode == 1 and "--arch host" in r.stderr


def synthetic_profile(explain, slowdown):
    """A main_test --profile export whose GEMM kernels' micro-kernel part ran SLOWDOWN times
    longer than predicted, every other kernel as predicted."""
    kernels = []
    for i, k in enumerate(explain["subgraphs"]):
        ms = k["predicted_ms"] + (slowdown - 1) * k.get("ukernel_ms", 0)
        kernels.append({"index": i, "name": f"k{i}", "ms_per_iter": ms})
    return {"profile": {"kernels": kernels}}


def test_refine_scales_the_micro_kernel_rate_by_the_measured_kernels(calibrated, tmp_path):
    spec, path, _ = calibrated
    assert 1e8 < spec["ukernel_fp32_flops"] < 1e14 and 1e8 < spec["ukernel_int8_ops"] < 1e15
    assert 1e7 < spec["pack_bytes_per_s"] < 1e13
    prefix = tmp_path / "nerf"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    assert tg("tune", prefix, "--no-build", "--arch-file", path).returncode == 0
    e = json.loads(tg("explain", prefix, "--json").stdout)
    gemms = [k for k in e["subgraphs"] if k["kind"] == "float_gemm"]
    assert gemms and all(k["ukernel_ms"] > 0 and k["compute_dtype"] == "float32" for k in gemms)
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(synthetic_profile(e, 2.0)))
    out = tmp_path / "refined.json"
    r = tg("calibrate", "--refine", prefix, "--arch-file", path, "--profile-json", profile, "-o", out)
    assert r.returncode == 0, r.stderr
    refined = json.loads(out.read_text())
    # Twice the time left for the micro-kernel: half its rate; nothing else moves.
    assert refined["ukernel_fp32_flops"] == pytest.approx(spec["ukernel_fp32_flops"] / 2, rel=1e-6)
    # Kernels where the micro-kernel is under a fifth of the measured time (kMinShare in
    # driver/refine_spec.cpp: NeRF's one-row alpha layer, with some calibrations) inform
    # no rate; which ones depends on the rates this machine measured.
    informing = [k for k in gemms if 2 * k["ukernel_ms"] >= 0.2 * (k["predicted_ms"] + k["ukernel_ms"])]
    assert 0 < len(informing) <= len(gemms)
    assert "ukernel_fp32_flops" in r.stderr and f"from {len(informing)} float GEMM kernels" in r.stderr
    assert {k: v for k, v in refined.items() if k != "ukernel_fp32_flops"} == \
        {k: v for k, v in spec.items() if k != "ukernel_fp32_flops"}
    # A model a hundred times slower moves the rate by the bound (8x), not more.
    profile.write_text(json.dumps(synthetic_profile(e, 100.0)))
    r = tg("calibrate", "--refine", prefix, "--arch-file", path, "--profile-json", profile, "-o", out)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["ukernel_fp32_flops"] == pytest.approx(spec["ukernel_fp32_flops"] / 8, rel=1e-6)
    # The refined spec is one tune accepts, and its GEMM predictions grow.
    assert tg("tune", prefix, "--no-build", "--arch-file", out).returncode == 0
    slower = json.loads(tg("explain", prefix, "--json").stdout)
    assert sum(k.get("ukernel_ms", 0) for k in slower["subgraphs"]) == \
        pytest.approx(8 * sum(k["ukernel_ms"] for k in gemms), rel=1e-6)


def test_refine_flags_are_checked(calibrated, tmp_path):
    _, path, _ = calibrated
    r = tg("calibrate", "--arch-file", path)
    assert r.returncode == 1 and "--refine PREFIX" in r.stderr
    r = tg("calibrate", "--profile-json", tmp_path / "p.json")
    assert r.returncode == 1 and "--refine PREFIX" in r.stderr
    r = tg("calibrate", "--refine", tmp_path / "nothing", "--arch-file", path)
    assert r.returncode == 1 and "no manifest" in r.stderr
