"""No shell anywhere: a model folder whose name is shell code is only a name.

tilegraph starts cmake, the compilers, the profiling harness and main_test
from argument vectors (driver/process.h); the Python side passes
lists to subprocess. A folder named with quotes, spaces, `$(...)`, backticks
and a newline must tune, build, profile, run and pass test_acc, and nothing
in its name may ever execute.
"""
import os
import subprocess
import sys
from pathlib import Path

from security_cli import env, needs_tilegraph, save_mlp, tg

pytestmark = needs_tilegraph

WEIRD = "a'b \"c\" $(touch PWNED) `touch PWNED` d\ne"


def pwned_files(*roots):
    return [p for r in roots for p in Path(r).rglob("PWNED*")]


def test_shell_code_in_the_prefix_is_only_a_name(tmp_path):
    cwd = tmp_path / "cwd"  # where a shell would have run `touch PWNED`
    cwd.mkdir()
    root = tmp_path / "models"
    prefix = save_mlp(root / WEIRD, seed=1, external_data=True)

    # Build, and profile the top-k configs on the host: the harness runs under a timeout.
    # The MLP's one kernel with candidates is its softmax, which AVX2 and AVX-512 hosts
    # run on the softmax micro-kernel whatever the config (not profiled): kept a block
    # kernel here, so that the harness builds and runs under this folder's name.
    r = tg("tune", prefix, "-j", "2", "--topk", "2", "--profile-topk", "on", cwd=cwd,
           extra_env={"TILEGRAPH_SOFTMAX_VARIANT": "none"})
    assert r.returncode == 0, r.stderr
    project = prefix / "tilegraph_rt" / "host"
    assert (project / "build" / "libmodel.so").is_file() and (project / "profile" / "results.txt").is_file()
    assert "top-2 profiling" in r.stderr

    r = tg("run", prefix, "--iters", "2", "--outputs", prefix / "out", cwd=cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (prefix / "out" / "y.npy").is_file()

    for runner in ("ctypes", "cli"):
        r = subprocess.run([sys.executable, "-m", "tilegraph.test_acc", str(prefix), "--runner", runner],
                           capture_output=True, text=True, cwd=cwd, env=env(), timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr

    assert pwned_files(tmp_path, Path.cwd()) == []
    # Nothing named after a mangled form of the path (CMake splits on quotes and
    # semicolons when it meets one): the models folder holds the model folder only.
    assert [p.name for p in root.iterdir()] == [WEIRD]
    rt = prefix / "tilegraph_rt"
    assert sorted(p.name for p in rt.iterdir()) == [".host.lock", ".host.next", "host"]
    assert os.readlink(rt / ".host.next") == "host"  # the staging folder's name, left as a link to the project
