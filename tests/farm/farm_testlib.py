"""A two-node Ray cluster on 127.0.0.1 for the farm tests, always torn down.

Each node is a `ray start --block` child in a session of its own, on ports picked
free for this cluster and a temp dir of its own, so parallel test runs do not meet;
stopping kills the whole session (never `ray stop`, which would stop every Ray
cluster of this user on the machine). Small on purpose: one CPU per node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKER_RESOURCE = "x86_64-test"
OBJECT_STORE_BYTES = 200 << 20  # the small models' projects are a few MB
# For the cluster and every driver that connects to it. Auth explicitly off: Ray
# turns token auth on by itself where ~/.ray/auth_token exists (a private
# `ray.init()` writes one), and the nodes and drivers must agree.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def ray_cli() -> str | None:
    return shutil.which("ray")


def free_ports(count: int) -> list[int]:
    socks, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _node_ports() -> list[str]:
    p = free_ports(7)
    return ["--node-manager-port", str(p[0]), "--object-manager-port", str(p[1]),
            "--dashboard-agent-listen-port", str(p[2]), "--dashboard-agent-grpc-port", str(p[3]),
            "--metrics-export-port", str(p[4]), "--runtime-env-agent-port", str(p[5]),
            # worker ports: a range unlikely to be taken, different per node
            "--min-worker-port", str(20000 + p[6] % 20000), "--max-worker-port", str(20000 + p[6] % 20000 + 40)]


class Cluster:
    """Head (1 CPU, no custom resource) + worker (1 CPU, WORKER_RESOURCE)."""

    def __init__(self, env: dict):
        self.temp = Path(tempfile.mkdtemp(prefix="tgray-", dir="/tmp"))  # short: Ray's socket paths are limited
        self.port = free_ports(1)[0]
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**env, **RAY_ENV}
        self.nodes: list[subprocess.Popen] = []

    def _start(self, args: list[str], log: str) -> subprocess.Popen:
        out = open(self.temp / log, "w")
        proc = subprocess.Popen([ray_cli(), "start", "--block", "--disable-usage-stats", *args], cwd=REPO,
                                env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(proc)
        return proc

    def start(self, timeout_s: float = 180) -> None:
        self._start(["--head", "--node-ip-address", "127.0.0.1", "--port", str(self.port), "--num-cpus", "1",
                     "--include-dashboard", "false", "--object-store-memory", str(OBJECT_STORE_BYTES), "--temp-dir", str(self.temp), *_node_ports()], "head.log")
        self.wait_for_nodes(1, timeout_s)
        self.start_worker(timeout_s)

    def start_worker(self, timeout_s: float = 180) -> None:
        alive = len(self.node_resources())
        self._start(["--address", self.address, "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                     "--resources", json.dumps({WORKER_RESOURCE: 1}), "--object-store-memory", str(OBJECT_STORE_BYTES),
                     *_node_ports()], f"worker{len(self.nodes)}.log")
        self.wait_for_nodes(alive + 1, timeout_s)

    def node_resources(self) -> dict[str, dict]:
        """{node id: its resources} of the live nodes (empty while the head is not up)."""
        code = ("import json, ray; ray.init(address=%r, log_to_driver=False); "
                "print(json.dumps({n['NodeID']: n['Resources'] for n in ray.nodes() if n['Alive']}))") % self.address
        try:
            r = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return {}
        lines = r.stdout.strip().splitlines()
        return json.loads(lines[-1]) if r.returncode == 0 and lines else {}

    def wait_for_nodes(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.node_resources()) >= count:
                return
            if any(p.poll() is not None for p in self.nodes):
                break
            time.sleep(2)
        raise RuntimeError(f"the Ray cluster did not come up with {count} nodes; logs in {self.temp}")

    def stop_node(self, proc: subprocess.Popen) -> None:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # Ray's daemons can outlive `ray start` in its session: kill what is left of it.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        for proc in reversed(self.nodes):
            self.stop_node(proc)
        if not os.environ.get("TG_FARM_KEEP_LOGS"):
            shutil.rmtree(self.temp, ignore_errors=True)


def processes() -> list[tuple[int, int, list[str]]]:
    """(pid, parent pid, argv) of this machine's processes."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(d.name), ppid, [a.decode(errors="replace") for a in argv if a]))
    return out
