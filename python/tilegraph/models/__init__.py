"""The Welder model set as PyTorch modules, for tilegraph.torch2onnx.

Each ``build_<name>(bs, small, impl)`` returns an :class:`Export`: the module, example
inputs, ONNX input/output names, integer input ranges and a one-line description.

``impl`` picks the implementation where a library one exists:
``own`` (the compact definitions in this package), ``lib`` (transformers / timm /
torchvision / torchaudio; error if missing) or ``auto`` (lib when importable, else own).
``small`` gives a tiny configuration of the same architecture (same op mix) for CI.

Only torch is required; the libraries are optional. Imports are lazy so that
``import tilegraph.models`` works without torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass
class Export:
    module: object
    inputs: tuple
    input_names: list
    output_names: list
    input_ranges: dict = field(default_factory=dict)  # name -> [low, high) for int inputs
    description: str = ""
    library: str = "own"  # which implementation was used


def have(module_name: str) -> bool:
    try:
        importlib.import_module(module_name)
        return True
    except Exception:  # ImportError, or a library broken against this torch
        return False


def timm_plain_attention() -> None:
    """Makes timm build attention from matmul/softmax (SDPA has no ONNX export below opset 14)."""
    try:
        from timm.layers import set_fused_attn
        set_fused_attn(False)
    except ImportError:
        pass


def use_lib(impl: str, module_name: str) -> bool:
    if impl == "own":
        return False
    if impl == "lib":
        if not have(module_name):
            raise RuntimeError(f"--impl lib needs the python package {module_name!r}")
        return True
    return have(module_name)


# name -> "module:function"
MODELS = {
    "bert": "bert:build",
    "vit": "vit:build",
    "vit_b16": "vit:build_b16",
    "swin_transformer": "swin:build",
    "mobilenet": "mobilenet:build",
    "resnet18": "resnet18:build",
    "resnet50": "resnet:build",
    "vgg16": "vgg:build",
    "unet": "unet:build",
    "mobilevit": "mobilevit:build",
    "NAFNet": "nafnet:build",
    "BSRN": "bsrn:build",
    "Restormer": "restormer:build",
    "Conformer": "conformer:build",
    "NeRF": "nerf:build",
}


def build(name: str, bs: int = 1, small: bool = False, impl: str = "auto") -> Export:
    key = {k.lower(): k for k in MODELS}.get(name.lower())
    if key is None:
        raise KeyError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    mod, fn = MODELS[key].split(":")
    m = importlib.import_module(f"{__name__}.{mod}")
    return getattr(m, fn)(bs=bs, small=small, impl=impl)
