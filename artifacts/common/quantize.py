"""INT8 versions of a model: onnxruntime.quantization's quantize_dynamic (int8
weights, activations quantized at run time: DynamicQuantizeLinear +
MatMulInteger), after its recommended pre-processing (quant_pre_process: shape
inference and constant folding, so transposed weights become initializers the
quantizer sees) — as benchmarks/int8_vs_onnxruntime.py makes them."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import paths


def quantize_dynamic_prefix(source: Path, name: str) -> Path:
    """WORK/NAME holding SOURCE's model quantized dynamically (made once), with its input_ranges.json."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prefix = paths.work_dir() / name
    if (prefix / "model.onnx").is_file():
        return prefix
    prefix.mkdir(parents=True, exist_ok=True)
    ranges = source / "input_ranges.json"
    if ranges.is_file():
        shutil.copyfile(ranges, prefix / ranges.name)
    pre = prefix / "fp32_pre.onnx"
    quant_pre_process(str(source / "model.onnx"), str(pre))
    quantize_dynamic(str(pre), str(prefix / "model.onnx"), weight_type=QuantType.QInt8)
    pre.unlink()
    return prefix
