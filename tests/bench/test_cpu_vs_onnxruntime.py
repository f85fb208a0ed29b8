"""benchmarks/cpu_vs_onnxruntime.py refuses a prefix it cannot measure before measuring any:
one without a model, one without a project for the --arch, each named in the error."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cpu_vs_onnxruntime.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_a_prefix_without_a_model_is_refused_by_name(tmp_path):
    missing = tmp_path / "no_such_model"
    r = run(missing, "--threads", "1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{missing}: no model.onnx" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_prefix_without_a_project_for_the_arch_is_refused_before_measuring(tmp_path):
    untuned = tmp_path / "untuned"
    untuned.mkdir()
    (untuned / "model.onnx").write_bytes(b"")
    r = run(untuned, "--threads", "1", "--arch", "host")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{untuned}: no compiled project for --arch host" in r.stderr
    assert f"tilegraph tune {untuned} --arch host" in r.stderr
    assert "== 1 thread" not in r.stdout  # nothing measured
