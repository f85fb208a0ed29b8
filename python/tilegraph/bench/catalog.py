"""Every leaf definition the presets draw on, each with its fixed ID.

IDs here are a promise (see :mod:`tilegraph.bench.ids`): change a leaf's contents
under the same ID only when the benchmark should keep its history (a better default
iteration count, say); give it a new ID when it measures something else. Names, tags
and descriptions may change freely.
"""

from __future__ import annotations

from .definitions import CompileConfig, DeviceSpec, Model, RunConfig


def _committed(name: str, zoo: str, inputs: tuple[str, ...], tags: tuple[str, ...], impl: str = "own") -> Model:
    """A small model committed under models/NAME (see models/README.md)."""
    return Model(id=name, name=name, onnx=f"models/{name}/model.onnx", zoo=zoo, small=True, impl=impl,
                 inputs=inputs, tags=tags + ("small",))


_BERT_SMALL_INPUTS = ("input_ids=1x16xi64", "attention_mask=1x16xi64", "token_type_ids=1x16xi64")
_IMAGE_32 = ("input=1x3x32x32xf32",)

SMALL_MODELS: tuple[Model, ...] = (
    _committed("bert_small", "bert", _BERT_SMALL_INPUTS, ("transformer", "nlp")),
    _committed("bert_small_opset17", "bert", _BERT_SMALL_INPUTS, ("transformer", "nlp", "opset17"), impl="lib"),
    _committed("vit_small", "vit", _IMAGE_32, ("transformer", "vision")),
    _committed("vit_small_opset17", "vit", _IMAGE_32, ("transformer", "vision", "opset17"), impl="lib"),
    _committed("swin_transformer_small", "swin_transformer", _IMAGE_32, ("transformer", "vision")),
    _committed("mobilenet_small", "mobilenet", _IMAGE_32, ("cnn", "vision"), impl="auto"),
    _committed("mobilevit_small", "mobilevit", ("input=1x3x64x64xf32",), ("cnn", "transformer", "vision")),
    _committed("NAFNet_small", "NAFNet", _IMAGE_32, ("cnn", "image-restoration")),
    _committed("BSRN_small", "BSRN", _IMAGE_32, ("cnn", "super-resolution")),
    _committed("Restormer_small", "Restormer", _IMAGE_32, ("transformer", "image-restoration")),
    _committed("Conformer_small", "Conformer", ("input=1x16x32xf32", "lengths=1xi64"), ("transformer", "speech")),
    _committed("NeRF_small", "NeRF", ("input=256x32xf32",), ("mlp",)),
)


def _full(zoo: str, batch_size: int = 1, fp16: bool = False, inputs: tuple[str, ...] = (),
          tags: tuple[str, ...] = (), opset: int = 11, impl: str = "auto") -> Model:
    """A full-size Welder-set model, exported with torch2onnx when first needed."""
    name = f"{zoo}_bs{batch_size}" + ("_fp16" if fp16 else "") + (f"_opset{opset}" if opset != 11 else "")
    return Model(id=name, name=name, zoo=zoo, batch_size=batch_size, fp16=fp16, inputs=inputs, impl=impl,
                 tags=tags + ("large",) + (("fp16",) if fp16 else ()) + ((f"opset{opset}",) if opset != 11 else ()),
                 opset=opset)


def _bert_inputs(bs: int) -> tuple[str, ...]:
    return tuple(f"{n}={bs}x128xi64" for n in ("input_ids", "attention_mask", "token_type_ids"))


LARGE_MODELS: tuple[Model, ...] = (
    _full("bert", 1, inputs=_bert_inputs(1), tags=("transformer", "nlp")),
    _full("bert", 64, inputs=_bert_inputs(64), tags=("transformer", "nlp")),
    _full("vit", 1, inputs=("input=1x3x224x224xf32",), tags=("transformer", "vision")),
    _full("swin_transformer", 1, inputs=("input=1x3x224x224xf32",), tags=("transformer", "vision")),
    _full("mobilenet", 1, inputs=("input=1x3x224x224xf32",), tags=("cnn", "vision")),
    _full("BSRN", 1, inputs=("input=1x3x256x256xf32",), tags=("cnn", "super-resolution")),
)

_IMAGE_224 = ("input=1x3x224x224xf32",)

# The float CPU set of issue 15, tracked against onnxruntime at 1 and 2 threads:
# Welder's exports (opset 11, no folding) and today's (opset 17, folding on).
CPU_FLOAT_MODELS: tuple[Model, ...] = (
    _full("bert", 1, inputs=_bert_inputs(1), tags=("transformer", "nlp")),
    _full("vit", 1, inputs=_IMAGE_224, tags=("transformer", "vision")),
    _full("swin_transformer", 1, inputs=_IMAGE_224, tags=("transformer", "vision")),
    _full("mobilenet", 1, inputs=_IMAGE_224, tags=("cnn", "vision")),
    _full("NAFNet", 1, inputs=("input=1x3x256x256xf32",), tags=("cnn", "image-restoration")),
    _full("resnet50", 1, inputs=_IMAGE_224, tags=("cnn", "vision")),
    _full("resnet50", 1, inputs=_IMAGE_224, tags=("cnn", "vision"), opset=17),
    _full("vit_b16", 1, inputs=_IMAGE_224, tags=("transformer", "vision"), opset=17),
    _full("mobilenet", 1, inputs=_IMAGE_224, tags=("cnn", "vision"), opset=17),
    _full("swin_transformer", 1, inputs=_IMAGE_224, tags=("transformer", "vision"), opset=17),
)

# GPU-only variants: half precision is where tensor cores pay off.
LARGE_GPU_MODELS: tuple[Model, ...] = (
    _full("bert", 1, fp16=True, inputs=_bert_inputs(1), tags=("transformer", "nlp")),
)

# ------------------------------------------------------------------- compile configs
HOST = CompileConfig(id="host", arch="host")
HOST_NO_FUSION = CompileConfig(id="host-no-fusion", arch="host", fusion=False)
H100 = CompileConfig(id="H100", arch="H100")
NEOVERSE_N2 = CompileConfig(id="neoverse-n2", arch="neoverse-n2")

# ----------------------------------------------------------------------- run configs
CPU_1T = RunConfig(id="cpu-1t", name="1 thread", threads=1)
CPU_ALL = RunConfig(id="cpu-all", name="all cores", threads=0)
CPU_2T = RunConfig(id="cpu-2t", name="2 threads", threads=2)
GPU = RunConfig(id="gpu", name="", threads=1)  # no name: nothing to choose on a GPU yet
# Under qemu every iteration is slow; a few tell enough about a ukernel change.
ARM64_1T = RunConfig(id="arm64-1t", name="1 thread", threads=1, warmup=1, iters=10)

# ----------------------------------------------------------------------------- devices
LOCAL_CPU = DeviceSpec(id="local-cpu", name="local", kind="cpu", description="the CPU of the machine running the suite")
LOCAL_GPU = DeviceSpec(id="local-gpu", name="local", kind="cuda", description="the NVIDIA GPU of the machine running the suite")
ARM64 = DeviceSpec(id="arm64", name="arm64", kind="arm64",
                   description="an arm64 CPU: the host if it is one, else qemu-aarch64 -cpu max")
