"""External data stays inside the model's folder.

An initializer's external-data location is a path the model chooses. tune must
read only regular files inside PREFIX (after resolving symlinks), check offset
and length against the file, and name the initializer and the field in every
refusal. A location naming a FIFO must not hang tune.
"""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from security_cli import TILEGRAPH, error_line, save, tg

pytestmark = pytest.mark.skipif(not os.path.exists(TILEGRAPH), reason="tilegraph is not built")

WEIGHT = np.arange(6, dtype=np.float32).reshape(2, 3)


def model_with_external(location, offset=None, length=None):
    """y = x + W, W stored externally at `location`."""
    w = numpy_helper.from_array(WEIGHT, "W")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    entries = [("location", location)] + ([("offset", offset)] if offset is not None else []) + \
        ([("length", length)] if length is not None else [])
    for k, v in entries:
        e = w.external_data.add()
        e.key, e.value = k, str(v)
    g = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def tune(prefix):
    return tg("tune", prefix, "--no-build", timeout=60)


def test_inside_the_folder_is_read(tmp_path):
    prefix = save(model_with_external("data/w.bin", offset=8), tmp_path / "m")
    (prefix / "data").mkdir()
    (prefix / "data" / "w.bin").write_bytes(b"\0" * 8 + WEIGHT.tobytes())
    r = tune(prefix)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("location, why", [
    ("../outside.bin", "leaves the model's folder"),
    ("data/../../outside.bin", "leaves the model's folder"),
    ("/etc/hostname", "must be a relative path"),
])
def test_paths_out_of_the_folder_are_refused(tmp_path, location, why):
    (tmp_path / "outside.bin").write_bytes(WEIGHT.tobytes())
    prefix = save(model_with_external(location), tmp_path / "m")
    r = tune(prefix)
    assert r.returncode == 1
    line = error_line(r)
    assert "initializer 'W'" in line and why in line, line


def test_symlink_out_of_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(WEIGHT.tobytes())
    prefix = save(model_with_external("w.bin"), tmp_path / "m")
    (prefix / "w.bin").symlink_to(secret)
    r = tune(prefix)
    assert r.returncode == 1
    line = error_line(r)
    assert "initializer 'W'" in line and "outside the model's folder" in line, line


def test_symlink_inside_the_folder_is_followed(tmp_path):
    prefix = save(model_with_external("w.bin"), tmp_path / "m")
    (prefix / "real.bin").write_bytes(WEIGHT.tobytes())
    (prefix / "w.bin").symlink_to(prefix / "real.bin")
    assert tune(prefix).returncode == 0


def test_fifo_does_not_hang(tmp_path):
    prefix = save(model_with_external("w.bin"), tmp_path / "m")
    os.mkfifo(prefix / "w.bin")
    r = tune(prefix)  # timeout=60 in tune(): a hang fails the test
    assert r.returncode == 1
    assert "is not a regular file" in error_line(r)


def test_directory_is_refused(tmp_path):
    prefix = save(model_with_external("sub"), tmp_path / "m")
    (prefix / "sub").mkdir()
    r = tune(prefix)
    assert r.returncode == 1
    assert "is not a regular file" in error_line(r)


@pytest.mark.parametrize("field, offset, length, message", [
    ("offset", "12abc", None, "external data offset '12abc' is not a non-negative integer"),
    ("offset", "-4", None, "external data offset '-4' is not a non-negative integer"),
    ("length", "99999999999999999999999", None, "external data length"),
    ("offset", str(2**62), None, "is too short"),
    ("length", None, "8", "external data length 8 but the shape needs 24 bytes"),
])
def test_offset_and_length_are_checked(tmp_path, field, offset, length, message):
    if field == "length" and offset is not None:  # the length case passes its value as `offset`
        offset, length = None, offset
    prefix = save(model_with_external("w.bin", offset=offset, length=length), tmp_path / "m")
    (prefix / "w.bin").write_bytes(WEIGHT.tobytes())
    r = tune(prefix)
    assert r.returncode == 1
    line = error_line(r)
    assert "initializer 'W'" in line and message in line, line


def test_missing_file_names_the_initializer(tmp_path):
    prefix = save(model_with_external("nope.bin"), tmp_path / "m")
    r = tune(prefix)
    assert r.returncode == 1
    line = error_line(r)
    assert "initializer 'W'" in line and "does not exist" in line, line
