"""benchmarks/cpu_vs_onnxruntime.py refuses a prefix it cannot measure before measuring any:
one without a model, one without a project for the --arch, each named in the error."""
import subprocess
import sys
import time
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



def load_script():
    import importlib.util
    python_dir = str(SCRIPT.parents[1] / "python")
    if python_dir not in sys.path:
        sys.path.insert(0, python_dir)
    spec = importlib.util.spec_from_file_location("cpu_vs_onnxruntime", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Busy:
    """Stands in for BusyCore: records whether the busy loop runs."""

    def __init__(self):
        self.running = True

    def pause(self):
        self.running = False

    def resume(self):
        self.running = True


class _Engine:
    """A model whose run "takes" 1 ms quiet and `busy_ms` while the busy loop
    runs (returned, not slept: the test measures no wall-clock time)."""

    def __init__(self, busy, busy_ms):
        self.busy, self.busy_ms, self.runs = busy, busy_ms, []

    def run(self, *args):
        self.runs.append(self.busy.running)
        return self.busy_ms if self.busy.running else 1.0


def test_busy_core_rounds_pair_a_quiet_and_a_busy_run_of_each_engine(monkeypatch):
    bench = load_script()
    monkeypatch.setattr(bench, "median_ms", lambda run, iters: run())  # an engine's time is what it returns
    busy = _Busy()
    tg, ort_ = _Engine(busy, 3.0), _Engine(busy, 5.0)
    tg_pairs, ort_pairs = bench.measure(tg, ort_, {}, 3, 0, 0.0, 0.0, busy=busy)
    assert tg_pairs == [(1.0, 3.0)] * 3
    assert ort_pairs == [(1.0, 5.0)] * 3
    # Each round: an untimed and a timed run of each engine quiet (the busy loop paused), then busy.
    assert tg.runs == [False, False, True, True] * 3
    assert ort_.runs == [False, False, True, True] * 3
    q, b, slowdown = bench.quiet_busy_slowdown([(1.0, 2.0), (2.0, 3.0), (4.0, 4.0)])
    assert (q, b, slowdown) == (2.0, 3.0, 1.5)


def _state_becomes(pid, wanted, timeout_s=5.0):
    """The process's /proc state once it is one of `wanted` (or the last seen at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in wanted or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def test_busy_core_pauses_and_resumes_its_process():
    bench = load_script()
    with bench.BusyCore(30) as busy:
        pid = busy.proc.pid
        busy.pause()
        assert _state_becomes(pid, ("T",)) == "T"
        busy.resume()
        assert _state_becomes(pid, ("R", "S")) in ("R", "S")
        busy.pause()  # a paused loop still ends with the block
    assert not busy.proc.is_alive()
