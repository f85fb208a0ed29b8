"""Helpers shared by test_acc, runner and the tests: paths, names, dtypes."""

from __future__ import annotations

import os
import platform
import re
import shutil
from pathlib import Path

import numpy as np

# ONNX TensorProto.DataType codes (the same numbers as enum tg_dtype in
# runtime/tilegraph_model.h) -> numpy dtypes.
ONNX_TO_NP = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class UsageError(Exception):
    """A problem the user fixes (missing file, bad flag): reported in one line, exit 2."""


def sanitize_name(name: str) -> str:
    """File-name form of an ONNX value name, as main_test uses for NAME.npy.

    Every character outside ``[A-Za-z0-9_.-]`` becomes ``_``.
    """
    return _UNSAFE.sub("_", name)


def repo_root() -> Path:
    """The source tree this package lives in (python/tilegraph/ -> repo)."""
    return Path(__file__).resolve().parent.parent.parent


def find_tilegraph_bin() -> Path | None:
    """The ``tilegraph`` CLI: $TILEGRAPH_BIN, else <repo>/build/bin/tilegraph, else PATH."""
    env = os.environ.get("TILEGRAPH_BIN")
    if env:
        p = Path(env)
        return p if p.is_file() and os.access(p, os.X_OK) else None
    p = repo_root() / "build" / "bin" / "tilegraph"
    if p.is_file() and os.access(p, os.X_OK):
        return p
    w = shutil.which("tilegraph")
    return Path(w) if w else None


def has_nvidia_gpu() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


def project_dir(prefix: str | os.PathLike, arch: str = "host") -> Path:
    """The runnable project of PREFIX for ARCH: PREFIX/tilegraph_rt/<arch>/.

    Arch names match case-insensitively (``h100`` finds ``H100``), like the CLI.
    For a GPU arch tuned with ``--emulate``, the CPU emulation of its kernels
    (``<arch>/emulation``) is used where there is no NVIDIA GPU or the GPU
    project was not built, as ``tilegraph run`` does.
    """
    root = Path(prefix) / "tilegraph_rt"
    name = "host" if arch.lower() in ("host", "x86", "cpu") else arch
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.name.lower() == name.lower():
                name = d.name
    proj = root / name
    emulation = proj / "emulation"
    native = (proj / "build" / "main_test").is_file()
    if (emulation / "build").is_dir() and (not native or not has_nvidia_gpu()):
        return emulation
    return proj


_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def elf_machine(path: str | os.PathLike) -> str:
    """The CPU an ELF file (main_test, libmodel.so) is built for: x86_64, aarch64, or 'unknown'."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return "unknown"
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return "unknown"
    return _ELF_MACHINES.get(int.from_bytes(header[18:20], "little"), "unknown")


def host_machine() -> str:
    """This machine's CPU in elf_machine's words (x86_64, aarch64, ...)."""
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def np_dtype(onnx_elem_type: int) -> np.dtype:
    try:
        return ONNX_TO_NP[int(onnx_elem_type)]
    except KeyError:
        raise UsageError(f"unsupported ONNX element type {onnx_elem_type}") from None
