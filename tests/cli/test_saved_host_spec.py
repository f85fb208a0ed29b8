"""`tilegraph calibrate --save` keeps a measured spec for this machine, and `--arch host`
(tune, arch) uses it without --arch-file; a spec of another machine or a broken file falls
back to the built-in spec with a warning; TILEGRAPH_HOST_SPEC chooses the file or turns it off."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TILEGRAPH = os.environ.get("TILEGRAPH_BIN", str(REPO / "build/bin/tilegraph"))

pytestmark = pytest.mark.skipif(not Path(TILEGRAPH).exists(), reason="tilegraph is not built")


def tg(config_home, *args, spec_env=None, timeout=600):
    """Runs tilegraph with XDG_CONFIG_HOME=config_home and TILEGRAPH_HOST_SPEC=spec_env (unset: None)."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(config_home))
    env.pop("TILEGRAPH_HOST_SPEC", None)
    if spec_env is not None:
        env["TILEGRAPH_HOST_SPEC"] = str(spec_env)
    return subprocess.run([TILEGRAPH, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


def builtin_spec(tmp_path):
    r = tg(tmp_path, "arch", "--json", spec_env="builtin")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def save(config_home, spec):
    path = config_home / "tilegraph" / "host.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec))
    return path


def test_calibrate_save_is_what_arch_host_and_tune_use(tmp_path):
    config = tmp_path / "config"
    r = tg(config, "calibrate", "--cores", "1", "--save", timeout=300)
    assert r.returncode == 0, r.stderr
    saved = config / "tilegraph" / "host.json"
    assert f"saved {saved}" in r.stderr and r.stdout == ""  # --save without -o prints no JSON
    spec = json.loads(saved.read_text())
    assert spec["compute_units"] == 1 and "calibrated on 1 core" in spec["description"]
    assert json.loads(tg(config, "arch", "--json").stdout) == spec
    assert f"saved in {saved}" in tg(config, "arch").stdout
    assert "saved in" not in tg(config, "arch", spec_env="builtin").stdout

    prefix = tmp_path / "nerf"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    r = tg(config, "tune", prefix, "--no-build")
    assert r.returncode == 0, r.stderr
    assert f"arch host: {spec['description']} (saved in {saved})" in r.stderr
    s = json.loads(tg(config, "explain", prefix, "--json").stdout)["arch_spec"]
    assert s["compute_units"] == 1 and s["peak_fp32_flops"] == spec["peak_fp32_flops"]
    assert s["kernel_launch_seconds"] == spec["kernel_launch_seconds"]

    # Turned off, the same tune plans for the built-in spec (every core).
    r = tg(config, "tune", prefix, "--no-build", spec_env="builtin")
    assert r.returncode == 0 and "arch host" not in r.stderr, r.stderr
    s = json.loads(tg(config, "explain", prefix, "--json").stdout)["arch_spec"]
    assert s["compute_units"] == os.cpu_count() and "calibrated" not in s["description"]


def test_without_a_saved_spec_tune_says_how_to_get_one(tmp_path):
    prefix = tmp_path / "nerf"
    prefix.mkdir()
    shutil.copy(REPO / "models/NeRF_small/model.onnx", prefix / "model.onnx")
    r = tg(tmp_path / "empty", "tune", prefix, "--no-build")
    assert r.returncode == 0, r.stderr
    assert "arch host: the built-in spec" in r.stderr and "tilegraph calibrate --save" in r.stderr


def test_a_spec_chosen_by_the_environment_is_used_anywhere(tmp_path):
    spec = dict(builtin_spec(tmp_path), description="a spec kept elsewhere", peak_fp32_flops=12.5e9)
    path = tmp_path / "box.json"
    path.write_text(json.dumps(spec))
    r = tg(tmp_path / "empty", "arch", "--json", spec_env=path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["peak_fp32_flops"] == 12.5e9
    # --arch-file still wins, and another arch never reads it.
    other = dict(spec, peak_fp32_flops=7e9)
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert json.loads(tg(tmp_path, "arch", "--json", "--arch-file", tmp_path / "other.json",
                         spec_env=path).stdout)["peak_fp32_flops"] == 7e9
    assert json.loads(tg(tmp_path, "arch", "--json", "--arch", "H100", spec_env=path).stdout)["name"] == "H100"


def test_another_machines_or_a_broken_spec_falls_back_with_a_warning(tmp_path):
    builtin = builtin_spec(tmp_path)
    config = tmp_path / "config"
    other = json.loads(json.dumps(builtin))
    l2 = next(l for l in other["levels"] if l["name"] == "l2")
    l2["capacity_bytes"] *= 2
    other["peak_fp32_flops"] = 12.5e9
    path = save(config, other)
    r = tg(config, "arch", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == builtin
    assert f"ignoring the saved host spec {path}: its l2 is" in r.stderr and "calibrate --save" in r.stderr

    path.write_text("{")
    r = tg(config, "arch", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == builtin
    assert "ignoring the saved host spec" in r.stderr and "not valid JSON" in r.stderr

    # Named explicitly, the same problems are errors, one line each.
    r = tg(config, "arch", spec_env=path)
    assert r.returncode == 1 and "TILEGRAPH_HOST_SPEC=" in r.stderr and "not valid JSON" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = tg(config, "arch", spec_env=tmp_path / "missing.json")
    assert r.returncode == 1 and "missing.json': no such file" in r.stderr


def test_save_refuses_when_saved_specs_are_off(tmp_path):
    r = tg(tmp_path, "calibrate", "--cores", "1", "--save", spec_env="builtin", timeout=300)
    assert r.returncode == 1 and "TILEGRAPH_HOST_SPEC=builtin" in r.stderr
