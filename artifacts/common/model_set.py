"""The Welder model set as the artifacts use it: the committed small exports
(models/*_small, no torch needed) or full-size exports made with torch2onnx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from . import paths

# The paper's ten models (Fig. 9), by tilegraph.torch2onnx name, with their small folder.
WELDER_MODELS = {
    "bert": "bert_small", "vit": "vit_small", "swin_transformer": "swin_transformer_small",
    "mobilenet": "mobilenet_small", "mobilevit": "mobilevit_small", "NAFNet": "NAFNet_small",
    "BSRN": "BSRN_small", "Restormer": "Restormer_small", "Conformer": "Conformer_small", "NeRF": "NeRF_small",
}
# --quick: the few that compile fastest yet cover attention, windows and convolutions.
QUICK_MODELS = ("bert", "vit", "swin_transformer", "NAFNet")
# Table 6's CNNs (Table 7 scales UNet and VGG-16 up); None: no committed small export.
CNN_MODELS = {"resnet18": "resnet18_small", "resnet50": None, "unet": "unet_small", "vgg16": "vgg16_small"}


def small_source(model: str) -> Path | None:
    """models/<MODEL>_small, or None where none is committed."""
    folder = WELDER_MODELS.get(model) or CNN_MODELS.get(model)
    return paths.MODELS / folder if folder else None


def export_full(model: str) -> Path:
    """A full-size export (bs 1, fp32) under WORK/export/MODEL, made once; needs torch."""
    prefix = paths.work_dir() / "export" / model
    if not (prefix / "model.onnx").is_file():
        prefix.mkdir(parents=True, exist_ok=True)
        with open(prefix / "export.log", "w") as log:
            subprocess.run([sys.executable, "-m", "tilegraph.torch2onnx", model, "--prefix", str(prefix)],
                           check=True, env={**os.environ, "PYTHONPATH": str(paths.REPO / "python")},
                           stdout=log, stderr=subprocess.STDOUT)
    return prefix


def torch_impl(source: Path) -> str:
    """torch2onnx's --impl that made SOURCE: 'own' for tilegraph.models' own
    definitions, else 'auto' (the library's, when installed)."""
    f = source / "export.json"
    library = json.loads(f.read_text()).get("library", "own") if f.is_file() else "auto"
    return "own" if library == "own" else "auto"
