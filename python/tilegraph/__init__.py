"""Python side of tilegraph.

Modules (each also runs as ``python -m tilegraph.<module>``):

* :mod:`tilegraph.test_acc`  -- compare a compiled model with onnxruntime on random inputs.
* :mod:`tilegraph.runner`    -- load ``PREFIX/tilegraph_rt/<arch>/build/libmodel.so`` through
  the C API (``runtime/tilegraph_model.h``) with ctypes; run and time it.
* :mod:`tilegraph.torch2onnx` -- export the Welder model set (PyTorch) to ``PREFIX/model.onnx``.

Only numpy, onnx and onnxruntime are required; torch is needed by torch2onnx alone.
"""

__version__ = "0.1.0"
