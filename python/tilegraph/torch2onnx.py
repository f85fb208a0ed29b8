"""Export a model of the Welder set from PyTorch to ``PREFIX/model.onnx``.

    python -m tilegraph.torch2onnx MODEL --prefix PREFIX [--bs 1] [--fp16] [--opset 11]
        [--small] [--constant-folding] [--impl auto|own|lib] [--seed 0] [--no-check]

MODEL is one of: bert, vit (ViT-S/32, Welder's), vit_b16, swin_transformer, mobilenet, resnet18,
resnet50, vgg16, unet, mobilevit, NAFNet, BSRN, Restormer, Conformer, NeRF (case-insensitive). Defaults follow Welder's
``torch2onnx.py``: opset 11, ``do_constant_folding=False``, eval mode, the
TorchScript exporter (``dynamo=False``), ``torch.manual_seed(seed)`` before the
model is built. ``--small`` builds a tiny configuration of the same architecture
(for CI); ``--constant-folding`` turns folding on (today's torch default).

Weights are random. Normalization layers get randomized affine parameters and
running statistics (weight 1+0.1*N(0,1), bias 0.1*N(0,1), BN mean 0.1*N(0,1), BN var
U(0.5,1.5)) so a compiler that drops a scale or a shift is caught.

Besides model.onnx it writes ``PREFIX/input_ranges.json`` ({input: [low, high)})
when the model has integer inputs (token ids, lengths; read by tilegraph.test_acc)
and ``PREFIX/export.json`` (model, config, library, versions, command). Unless
``--no-check``: onnx.checker, then onnxruntime on test_acc's seeded inputs
compared with PyTorch (max |a-b|/max(|b|,1) must be <= 1e-3 for fp32 exports).

``--fp16`` converts the exported model with onnxconverter_common when installed
(Welder's way, ``keep_io_types=False``), else exports the half-precision module.

torch is needed here only; nothing else in tilegraph imports it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

CHECK_RTOL = 1e-3


def randomize_norms(module, generator) -> None:
    """Random affine parameters / running stats for every normalization layer."""
    import torch

    with torch.no_grad():
        for m in module.modules():
            if "norm" not in type(m).__name__.lower():
                continue
            w = getattr(m, "weight", None)
            b = getattr(m, "bias", None)
            if isinstance(w, torch.nn.Parameter):
                w.copy_(1.0 + 0.1 * torch.randn(w.shape, generator=generator))
            if isinstance(b, torch.nn.Parameter):
                b.copy_(0.1 * torch.randn(b.shape, generator=generator))
            rm = getattr(m, "running_mean", None)
            rv = getattr(m, "running_var", None)
            if isinstance(rm, torch.Tensor) and isinstance(rv, torch.Tensor):
                rm.copy_(0.1 * torch.randn(rm.shape, generator=generator))
                rv.copy_(0.5 + torch.rand(rv.shape, generator=generator))


def _flatten(outputs):
    if isinstance(outputs, (tuple, list)):
        return list(outputs)
    return [outputs]


def build_seeded(model: str, bs: int = 1, small: bool = False, impl: str = "auto", seed: int = 0):
    """models.build with the export's weights: seeded, normalization layers
    randomized, eval mode (benchmarks/gpu_vs_torch.py times this same module)."""
    import torch

    from . import models

    torch.manual_seed(seed)
    ex = models.build(model, bs=bs, small=small, impl=impl)
    randomize_norms(ex.module, torch.Generator().manual_seed(seed + 1))
    ex.module.eval()
    return ex


def export(model: str, prefix: str | Path, bs: int = 1, fp16: bool = False, opset: int = 11,
           small: bool = False, constant_folding: bool = False, impl: str = "auto",
           seed: int = 0, check: bool = True, command: str | None = None, log=print) -> dict:
    """Exports MODEL to PREFIX/model.onnx; returns the export.json dict."""
    import torch

    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    ex = build_seeded(model, bs=bs, small=small, impl=impl, seed=seed)
    module = ex.module
    inputs = tuple(ex.inputs)
    convert_after = False
    if fp16:
        try:
            import onnxconverter_common  # noqa: F401
            convert_after = True
        except ImportError:
            module = module.half()
            inputs = tuple(t.half() if t.is_floating_point() else t for t in inputs)

    path = prefix / "model.onnx"
    kwargs = dict(input_names=ex.input_names, output_names=ex.output_names, export_params=True,
                  training=torch.onnx.TrainingMode.EVAL, do_constant_folding=constant_folding,
                  opset_version=opset)
    with torch.no_grad():
        try:
            torch.onnx.export(module, inputs, str(path), dynamo=False, **kwargs)
        except TypeError as e:  # torch < 2.5 has no dynamo argument
            if "dynamo" not in str(e):
                raise
            torch.onnx.export(module, inputs, str(path), **kwargs)
    if convert_after:
        import onnx
        from onnxconverter_common import convert_float_to_float16

        m16 = convert_float_to_float16(onnx.load(str(path)), keep_io_types=False)
        onnx.save(m16, str(path))

    ranges_path = prefix / "input_ranges.json"
    if ex.input_ranges:
        ranges_path.write_text(json.dumps(ex.input_ranges, indent=2) + "\n")
    elif ranges_path.exists():
        ranges_path.unlink()

    import onnx

    info = {
        "model": model,
        "config": ex.description,
        "library": ex.library,
        "small": small,
        "batch_size": bs,
        "fp16": fp16,
        "opset": opset,
        "constant_folding": constant_folding,
        "exporter": "torch.onnx.export (TorchScript, dynamo=False)",
        "seed": seed,
        "torch": torch.__version__.split("+")[0],
        "onnx_ir_version": onnx.load(str(path), load_external_data=False).ir_version,
        "inputs": {n: [list(t.shape), str(t.dtype).replace("torch.", "")]
                   for n, t in zip(ex.input_names, inputs)},
        "input_ranges": ex.input_ranges,
        "command": command,
    }
    (prefix / "export.json").write_text(json.dumps(info, indent=2) + "\n")
    log(f"wrote {path} ({path.stat().st_size / 1024:.1f} KiB): {ex.description} [{ex.library}]")
    if check:
        _check(path, module, ex, inputs, seed, fp16 and not convert_after, convert_after, log)
    return info


def _check(path: Path, module, ex, example_inputs, seed, half_module, converted, log) -> None:
    import onnx
    import torch

    from .inputs import generate_inputs, model_inputs
    from .test_acc import compare, run_onnxruntime

    onnx.checker.check_model(str(path), full_check=True)
    specs = model_inputs(path)
    shapes = {n: tuple(t.shape) for n, t in zip(ex.input_names, example_inputs)}
    feed = generate_inputs(specs, seed, ex.input_ranges, shapes)
    got = run_onnxruntime(path, feed)
    if converted:
        log("check: onnx.checker ok, onnxruntime ran (fp16-converted: not compared with torch)")
        return
    with torch.no_grad():
        ref = _flatten(module(*[torch.from_numpy(np.ascontiguousarray(feed[n]))
                                for n in ex.input_names]))
    tol = 1e-2 if half_module else CHECK_RTOL
    worst = 0.0
    for name, r in zip(ex.output_names, ref):
        c = compare(name, got[name], r.detach().numpy(), tol)
        worst = max(worst, c.max_rel)
        if not c.ok:
            raise RuntimeError(f"onnxruntime differs from torch: {c.line()}")
    log(f"check: onnx.checker ok, onnxruntime vs torch max_rel {worst:.2e} "
        f"over {len(ref)} output(s)")


def main(argv=None) -> int:
    from .models import MODELS

    p = argparse.ArgumentParser(prog="python -m tilegraph.torch2onnx",
                                description="Export a Welder-set model to PREFIX/model.onnx.")
    p.add_argument("model", help=", ".join(MODELS))
    p.add_argument("--prefix", default="temp")
    p.add_argument("--bs", type=int, default=1)
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--opset", type=int, default=11)
    p.add_argument("--small", action="store_true", help="tiny config of the same architecture")
    p.add_argument("--constant-folding", action="store_true",
                   help="do_constant_folding=True (Welder: False)")
    p.add_argument("--impl", choices=["auto", "own", "lib"], default="auto",
                   help="own definitions, library ones (transformers/timm/torchaudio), or "
                        "library when importable (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="skip onnx.checker and the onnxruntime-vs-torch comparison")
    args = p.parse_args(argv)
    cmd_argv = sys.argv[1:] if argv is None else list(argv)
    command = "python -m tilegraph.torch2onnx " + " ".join(shlex.quote(a) for a in cmd_argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("error: torch is not installed (pip install torch torchvision)", file=sys.stderr)
        return 2
    try:
        export(args.model, args.prefix, args.bs, args.fp16, args.opset, args.small,
               args.constant_folding, args.impl, args.seed, args.check, command)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
