"""Regenerate the committed CI models (``models/``) and their README table.

    python -m tilegraph.model_zoo [MODELS_DIR] [--only NAME ...] [--readme-only]

Each entry below is one ``python -m tilegraph.torch2onnx`` command line; the
README's table is written from the ``export.json`` files the exports leave.
Needs torch + torchvision; the two opset-17 entries also need transformers / timm.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


WELDER_SET = ["bert", "vit", "swin_transformer", "mobilenet", "mobilevit", "NAFNet", "BSRN",
              "Restormer", "Conformer", "NeRF"]


def entries(models_dir: str = "models") -> dict:
    """folder name -> torch2onnx argv (relative to the repository root)."""
    out = {}
    for m in WELDER_SET:
        impl = [] if m == "mobilenet" else ["--impl", "own"]
        out[f"{m}_small"] = [m, "--prefix", f"{models_dir}/{m}_small", "--small", *impl]
    # Table 6's CNNs (Table 7 scales UNet and VGG-16 up): the small configs' own
    # definitions (resnet18 and vgg16 full-size are torchvision's)
    for m in ("resnet18", "vgg16", "unet"):
        out[f"{m}_small"] = [m, "--prefix", f"{models_dir}/{m}_small", "--small"]
    # today's exporter defaults on library models: opset 17, constant folding
    out["bert_small_opset17"] = ["bert", "--prefix", f"{models_dir}/bert_small_opset17", "--small",
                                 "--opset", "17", "--constant-folding", "--impl", "lib"]
    out["vit_small_opset17"] = ["vit", "--prefix", f"{models_dir}/vit_small_opset17", "--small",
                                "--opset", "17", "--constant-folding", "--impl", "lib"]
    # a half-precision model as given (float16 inputs, weights and outputs)
    out["bert_small_fp16"] = ["bert", "--prefix", f"{models_dir}/bert_small_fp16", "--small",
                              "--impl", "own", "--fp16"]
    return out


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KiB"


def write_readme(models_dir: Path) -> None:
    rows = []
    total = 0
    for name in sorted(entries()):
        d = models_dir / name
        f = d / "export.json"
        if not f.is_file():
            continue
        info = json.loads(f.read_text())
        size = sum(p.stat().st_size for p in d.iterdir() if p.is_file())
        total += size
        ins = ", ".join(f"{n} {dt} [{'x'.join(map(str, shape))}]"
                        + (f" in [{info['input_ranges'][n][0]}, {info['input_ranges'][n][1]})"
                           if n in info.get("input_ranges", {}) else "")
                        for n, (shape, dt) in info["inputs"].items())
        cf = "on" if info["constant_folding"] else "off"
        rows.append(f"| `{name}` | {info['library']} | {info['config']} | {ins} | "
                    f"{info['opset']} (folding {cf}) | {_size((d / 'model.onnx').stat().st_size)} |"
                    f" `{info['command']}` |")
    text = f"""# models/ — small exports of the Welder model set for CI

Each folder is a tilegraph PREFIX: `model.onnx`, `export.json` (how it was made) and, for
models with integer inputs, `input_ranges.json` (`{{input: [low, high)}}`, read by
`tilegraph.test_acc` when it draws random inputs).

The configurations are tiny versions of the Welder models (same blocks and op mix,
hidden sizes 4-64, 1-2 layers, 32x32-64x64 images) with random weights; normalization
layers get random scale/shift/statistics so a dropped affine term shows up. The
`*_small` models use Welder's export settings (TorchScript exporter, opset 11,
`do_constant_folding=False`: LayerNorm and GELU arrive decomposed); the `*_opset17`
ones use the library definitions (transformers, timm) with today's defaults (opset 17,
constant folding on: `LayerNormalization` nodes, folded shape chains); `bert_small_fp16`
is `bert_small` exported in half precision (float16 weights and activations, float32
accumulation in tilegraph's reductions).

`tests/models/test_model_files.py` checks each with `onnx.checker` and onnxruntime;
`tests/models/test_models.py` compiles each with `tilegraph tune` and compares with
onnxruntime through `tilegraph.test_acc`.

| folder | source | config | inputs | opset | size | command |
|---|---|---|---|---|---|---|
""" + "\n".join(rows) + f"""

Total: {total / 2**20:.2f} MiB.

Commands run from the repository root with `PYTHONPATH=python`; all of them at once:

```
PYTHONPATH=python python -m tilegraph.model_zoo models
```

They need torch and torchvision (`pip install torch torchvision`; the PyPI wheel is the
CUDA build, which runs on a CPU-only machine once its CUDA libraries are installed);
the `*_opset17` ones also need `transformers` and `timm`. Exports are deterministic
for a given torch version (`--seed 0`); the versions used are in each `export.json`.
Full-size models: drop `--small` (e.g. `python -m tilegraph.torch2onnx bert --prefix
work/bert`), which also picks the library implementation where one is installed
(`--impl auto`).
"""
    (models_dir / "README.md").write_text(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tilegraph.model_zoo", description=__doc__)
    p.add_argument("models_dir", nargs="?", default="models")
    p.add_argument("--only", nargs="*", help="folder names to regenerate")
    p.add_argument("--readme-only", action="store_true")
    args = p.parse_args(argv)
    models_dir = Path(args.models_dir)
    if not args.readme_only:
        from .torch2onnx import main as t2o_main

        for name, argv_ in entries(args.models_dir).items():
            if args.only and name not in args.only:
                continue
            print(f"== {name}", flush=True)
            rc = t2o_main(argv_)
            if rc:
                return rc
            # record the command line as run from the repository root
            f = models_dir / name / "export.json"
            info = json.loads(f.read_text())
            info["command"] = ("python -m tilegraph.torch2onnx "
                               + " ".join(shlex.quote(a) for a in argv_))
            f.write_text(json.dumps(info, indent=2) + "\n")
    write_readme(models_dir)
    print(f"wrote {models_dir / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
