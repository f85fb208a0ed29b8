"""What this machine offers, so each experiment can say which columns it skips and why.

The host CPU is always there. A column that needs something absent (an NVIDIA GPU,
torch, torch with CUDA, TensorRT's trtexec, onnxruntime) is reported as
``skipped: <reason>`` instead of failing.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
from dataclasses import dataclass, field

from . import paths  # noqa: F401  (puts python/ on sys.path)
from tilegraph.bench.devices import cpu_model, gpu_names, usable_cpus


@dataclass
class Machine:
    cpu: str
    cores: int
    gpus: list = field(default_factory=list)       # nvidia-smi's "name, driver, memory" lines
    onnxruntime: str | None = None                 # version, or None when absent
    torch: str | None = None
    torch_cuda: bool = False
    trtexec: str | None = None                     # path

    def missing(self, need: str) -> str | None:
        """Why a column needing NEED ('gpu', 'onnxruntime', 'torch', 'torch-cuda',
        'trtexec') cannot run here, or None when it can."""
        if need == "gpu" and not self.gpus:
            return "no NVIDIA GPU (nvidia-smi absent or lists none)"
        if need == "onnxruntime" and self.onnxruntime is None:
            return "onnxruntime is not installed"
        if need in ("torch", "torch-cuda") and self.torch is None:
            return "PyTorch is not installed (pip install torch)"
        if need == "torch-cuda" and not self.torch_cuda:
            return "PyTorch has no CUDA device here"
        if need == "trtexec" and self.trtexec is None:
            return "TensorRT's trtexec is not on PATH"
        return None

    def summary(self) -> str:
        parts = [f"CPU: {self.cpu} ({self.cores} usable cores)",
                 "GPU: " + ("; ".join(self.gpus) if self.gpus else "none"),
                 f"onnxruntime: {self.onnxruntime or 'absent'}",
                 f"PyTorch: {self.torch or 'absent'}" + (" (CUDA)" if self.torch_cuda else ""),
                 f"trtexec: {self.trtexec or 'absent'}"]
        return " · ".join(parts)


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return getattr(__import__(module), "__version__", "unknown")
    except Exception:  # an installed but broken package is as good as absent here
        return None


@functools.lru_cache(maxsize=1)
def detect() -> Machine:
    torch_version = _version("torch")
    torch_cuda = False
    if torch_version is not None:
        import torch
        torch_cuda = bool(torch.cuda.is_available())
    return Machine(cpu=cpu_model(), cores=usable_cpus(), gpus=gpu_names(),
                   onnxruntime=_version("onnxruntime"), torch=torch_version, torch_cuda=torch_cuda,
                   trtexec=shutil.which("trtexec"))
