"""`tilegraph arch [--arch NAME | --arch-file F] [--json]`: the resolved spec tune
uses, for tools (artifacts/fig01) that divide achieved rates by the peaks."""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(*args):
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=60)


def test_a_built_in_gpu_spec_is_printed_as_its_file_says():
    r = tg("arch", "--arch", "h100", "--json")
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    want = json.loads((REPO / "scheduler/arch/H100.json").read_text())
    assert spec["name"] == "H100" and spec["target"] == "cuda"
    for key in ("compute_units", "peak_fp32_flops", "peak_fp16_flops", "peak_int8_ops"):
        assert spec[key] == want[key], key
    assert [(l["name"], l["bandwidth_bytes_per_s"]) for l in spec["levels"]] == \
           [(l["name"], l["bandwidth_bytes_per_s"]) for l in want["levels"]]
    assert "tensor_cores" not in spec  # written only when off


def test_the_host_spec_has_positive_peaks_and_dram_first():
    r = tg("arch", "--json")
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["name"] == "host" and spec["target"] == "cpu"
    assert spec["compute_units"] == os.cpu_count() or spec["compute_units"] >= 1
    assert spec["peak_fp32_flops"] > 1e9 and spec["peak_int8_ops"] >= spec["peak_fp32_flops"]
    assert spec["levels"][0]["name"] == "dram" and spec["levels"][0]["bandwidth_bytes_per_s"] > 1e9


def test_an_arch_file_is_read_back_as_tune_would(tmp_path):
    spec = json.loads(tg("arch", "--arch", "A100", "--json").stdout)
    spec["peak_fp32_flops"] = 1.25e13
    spec["levels"][0]["bandwidth_bytes_per_s"] = 1.5e12
    f = tmp_path / "a100.json"
    f.write_text(json.dumps(spec))
    r = tg("arch", "--arch-file", f, "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["peak_fp32_flops"] == 1.25e13 and got["levels"][0]["bandwidth_bytes_per_s"] == 1.5e12
    text = tg("arch", "--arch-file", f).stdout
    assert "A100" in text and "peak fp32 12500.0 GFLOP/s" in text and "dram: " in text and "1500.0 GB/s" in text
    # the file must describe the --arch given, as for tune
    r = tg("arch", "--arch", "H100", "--arch-file", f)
    assert r.returncode == 1 and r.stderr.strip() == f"error: --arch-file '{f}' describes A100, not --arch H100"


def test_the_text_form_names_peaks_and_levels():
    r = tg("arch", "--arch", "V100")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("V100: ")
    assert "80 compute units" in r.stdout and "GFLOP/s" in r.stdout and "(tensor cores)" in r.stdout
    assert "shared: " in r.stdout and "per compute unit" in r.stdout


def test_bad_input_is_one_line_naming_it(tmp_path):
    r = tg("arch", "--arch", "nope")
    assert r.returncode == 1 and r.stderr.startswith("error: unknown --arch 'nope'") and r.stderr.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "H100"}')
    r = tg("arch", "--arch-file", bad)
    assert r.returncode == 1 and str(bad) in r.stderr and r.stderr.count("\n") == 1
    assert "arch" in tg("--help").stdout


def test_cores_gives_the_built_in_host_spec_for_that_many_threads_as_a_spec_file(tmp_path):
    r = tg("arch", "--cores", "1", "--json")
    assert r.returncode == 0, r.stderr
    one = json.loads(r.stdout)
    mine = json.loads(tg("arch", "--json").stdout)
    assert one["name"] == "host" and one["compute_units"] == 1
    assert one["peak_fp32_flops"] * mine["compute_units"] == pytest.approx(mine["peak_fp32_flops"])
    spec = tmp_path / "host1.json"
    spec.write_text(r.stdout)
    back = tg("arch", "--arch-file", spec, "--json")  # readable as tune --arch-file reads it
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["compute_units"] == 1


@pytest.mark.parametrize("args", [("--cores", "0"), ("--cores", "2", "--arch", "h100")])
def test_cores_refuses_what_it_cannot_describe(args):
    r = tg("arch", *args)
    assert r.returncode != 0 and r.stdout == ""
    assert "--cores" in r.stderr
