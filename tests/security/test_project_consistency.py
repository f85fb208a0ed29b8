"""Projects are consistent or refused.

libmodel.so, weights.bin and manifest.json of a project carry one project
hash (driver/project_hash.h) and the model refuses weights from
another compile; tune builds in tilegraph_rt/.<arch>.next and swaps the
project in only when complete (driver/project_staging.h); nothing
tune writes goes through a symlink.
"""
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np

from security_cli import TILEGRAPH, env, needs_tilegraph, save_mlp, tg

pytestmark = needs_tilegraph


def project(prefix: Path) -> Path:
    return prefix / "tilegraph_rt" / "host"


def header_hash(weights: Path) -> str:
    header = weights.read_bytes()[:64]
    assert header.startswith(b"tilegraph-weights/1 "), header
    return header[20:36].decode()


def run_outputs(prefix: Path, tmp: Path, name: str) -> np.ndarray:
    """y of `tilegraph run` on fixed inputs (tmp/in/x.npy)."""
    inputs = tmp / "in"
    if not inputs.exists():
        inputs.mkdir()
        np.save(inputs / "x.npy", np.random.RandomState(0).randn(4, 16).astype(np.float32))
    r = tg("run", prefix, "--iters", "1", "--inputs", inputs, "--outputs", tmp / name)
    assert r.returncode == 0, r.stdout + r.stderr
    return np.load(tmp / name / "y.npy")


def tuned(prefix: Path, *flags) -> Path:
    r = tg("tune", prefix, "-j", "2", *flags)
    assert r.returncode == 0, r.stderr
    return project(prefix)


def test_weights_of_another_tune_are_refused(tmp_path):
    a = tuned(save_mlp(tmp_path / "a", seed=1))
    b = tuned(save_mlp(tmp_path / "b", seed=2))  # same architecture, other weights
    hash_a = json.loads((a / "manifest.json").read_text())["project_hash"]
    hash_b = json.loads((b / "manifest.json").read_text())["project_hash"]
    assert hash_a != hash_b and header_hash(a / "weights.bin") == hash_a and header_hash(b / "weights.bin") == hash_b
    assert f'kProjectHash[] = "{hash_a}"'.encode() in (a / "model.cpp").read_bytes()
    assert hash_a.encode() in (a / "build" / "libmodel.so").read_bytes()

    assert (a / "weights.bin").stat().st_size == (b / "weights.bin").stat().st_size
    (a / "weights.bin").write_bytes((b / "weights.bin").read_bytes())
    r = tg("run", tmp_path / "a", "--iters", "1")
    assert r.returncode == 2, r.stdout + r.stderr
    message = r.stdout + r.stderr
    assert "written by another tune" in message and hash_a in message and hash_b in message, message

    # The Python runner loads the same library: refused too.
    r = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "tilegraph.test_acc", str(tmp_path / "a")],
                       capture_output=True, text=True, env=env(), timeout=600)
    assert r.returncode != 0 and "written by another tune" in r.stdout + r.stderr, r.stdout + r.stderr


def test_the_same_model_gives_the_same_hash_anywhere(tmp_path):
    a = tuned(save_mlp(tmp_path / "a", seed=1), "--no-build")
    b = tuned(save_mlp(tmp_path / "elsewhere" / "b", seed=1), "--no-build")
    c = tuned(save_mlp(tmp_path / "c", seed=1), "--no-build", "--topk", "3")  # a flag is part of the identity
    for name in ("model.cpp", "weights.bin", "manifest.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert header_hash(a / "weights.bin") != header_hash(c / "weights.bin")


def test_symlinks_in_a_project_are_replaced_not_followed(tmp_path):
    prefix = save_mlp(tmp_path / "m", seed=1)
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {}
    for name in ("model.cpp", "weights.bin", "build.log", "schedule_cache.json", "compile_stats.json"):
        victims[name] = outside / name
        victims[name].write_text(f"outside {name}\n")
    # Before the first tune, and planted into a tuned project.
    for step in ("fresh", "retune"):
        p = project(prefix)
        p.mkdir(parents=True, exist_ok=True)
        for name, target in victims.items():
            (p / name).unlink(missing_ok=True)
            (p / name).symlink_to(target)
        rt = prefix / "tilegraph_rt"
        for name in (".host.next", ".host.lock"):  # the staging folder and the lock file, too
            if (rt / name).is_symlink() or (rt / name).is_file():
                (rt / name).unlink()
        (rt / ".host.next").symlink_to(outside, target_is_directory=True)
        (rt / ".host.lock").symlink_to(outside / "lock")
        tuned(prefix)
        for name, target in victims.items():
            assert target.read_text() == f"outside {name}\n", (step, name)
            assert not (p / name).is_symlink() and (p / name).is_file(), (step, name)
        assert sorted(x.name for x in outside.iterdir()) == sorted(victims), step
        assert not (rt / ".host.lock").is_symlink()
        run_outputs(prefix, tmp_path, "out_" + step)


def test_a_failed_tune_leaves_the_previous_project_runnable(tmp_path):
    prefix = save_mlp(tmp_path / "m", seed=1)
    p = tuned(prefix)
    before = run_outputs(prefix, tmp_path, "before")
    old_hash = header_hash(p / "weights.bin")

    # The model changes (same shapes, other weights) and the re-tune fails
    # in its build: a cmake that always fails comes first on PATH.
    save_mlp(prefix, seed=2)
    broken = tmp_path / "broken_bin"
    broken.mkdir()
    (broken / "cmake").write_text("#!/bin/sh\necho 'error: broken on purpose' >&2\nexit 1\n")
    (broken / "cmake").chmod(0o755)
    r = tg("tune", prefix, "-j", "2", extra_env={"PATH": f"{broken}:{os.environ['PATH']}"})
    assert r.returncode == 1 and "building the generated project failed" in r.stderr, r.stderr
    assert ".host.next" in r.stderr  # the failed attempt's log is kept there
    assert header_hash(p / "weights.bin") == old_hash
    assert json.loads((p / "manifest.json").read_text())["project_hash"] == old_hash
    np.testing.assert_array_equal(run_outputs(prefix, tmp_path, "after_failure"), before)

    # Interrupted in its build (Ctrl-C reaches tilegraph and cmake alike). A
    # cmake that waits before it runs holds the build open: with a warm
    # ccache the real build can finish before any signal arrives, and the
    # test would prove nothing.
    slow = tmp_path / "slow_bin"
    slow.mkdir()
    (slow / "cmake").write_text(f"#!/bin/sh\nsleep 60\nexec {shutil.which('cmake')} \"$@\"\n")
    (slow / "cmake").chmod(0o755)
    # Ctrl-C at a terminal kills by default; a test run started in the
    # background of a shell without job control (as CI may be) inherits
    # SIGINT ignored, and the tune would sail through the signal.
    proc = subprocess.Popen([TILEGRAPH, "tune", str(prefix), "-j", "1"], stderr=subprocess.PIPE, text=True,
                            env=dict(env(), PATH=f"{slow}:{os.environ['PATH']}"), start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    interrupted = False
    for line in proc.stderr:
        if "building with cmake" in line:
            os.killpg(proc.pid, signal.SIGINT)
            interrupted = True
            break
    proc.wait(timeout=600)
    assert interrupted, "the re-tune never reached its build"
    assert proc.returncode != 0, "the tune finished although it was interrupted in its build"
    assert header_hash(p / "weights.bin") == old_hash
    np.testing.assert_array_equal(run_outputs(prefix, tmp_path, "after_interrupt"), before)

    # A tune that completes replaces the project, and still rebuilds only what changed.
    p = tuned(prefix)
    assert header_hash(p / "weights.bin") != old_hash
    after = run_outputs(prefix, tmp_path, "after_retune")
    assert not np.array_equal(after, before)
    r = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "tilegraph.test_acc", str(prefix)],
                       capture_output=True, text=True, env=env(), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    r = tg("tune", prefix, "-j", "2")
    assert r.returncode == 0, r.stderr
    assert "Building CXX object" not in (p / "build.log").read_text()


def test_a_tuned_project_rebuilds_in_place(tmp_path):
    """Its build folder was configured in .host.next; after the swap that name links to the project."""
    prefix = save_mlp(tmp_path / "m", seed=1)
    p = tuned(prefix)
    rt = prefix / "tilegraph_rt"
    assert (rt / ".host.next").is_symlink() and os.readlink(rt / ".host.next") == "host"
    before = run_outputs(prefix, tmp_path, "before")
    library = p / "build" / "libmodel.so"
    old_mtime = library.stat().st_mtime_ns
    (p / "model.cpp").touch()
    r = subprocess.run(["cmake", "--build", str(p / "build")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert library.stat().st_mtime_ns > old_mtime  # rebuilt, in the project's own build folder
    assert not any(x.name == "build" for x in rt.iterdir())  # nothing written beside the project
    np.testing.assert_array_equal(run_outputs(prefix, tmp_path, "rebuilt"), before)

    # A re-tune replaces the link by its staging folder (not following it), and leaves it again.
    save_mlp(prefix, seed=2)
    p = tuned(prefix)
    assert (rt / ".host.next").is_symlink() and sorted(x.name for x in rt.iterdir()) == [".host.lock", ".host.next", "host"]
    assert not np.array_equal(run_outputs(prefix, tmp_path, "retuned"), before)
