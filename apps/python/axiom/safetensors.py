"""The safetensors format read and written with NumPy alone (Debian 12 has no python3-safetensors):
the files axiom's Module.save() writes, for PyTorch or anything else to load.

    arrays, metadata = axiom.safetensors.load("model.safetensors")   # {name: numpy array}, {key: str}
    axiom.safetensors.save("copy.safetensors", arrays)

Format: 8 bytes (the header's length N, little-endian), N bytes of JSON
{"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
then the tensors' bytes, row-major, little-endian.
"""
import json
import os
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "U8": np.uint8}
_NAMES = {np.dtype(v).str: k for k, v in _DTYPES.items()}


def load(path):
    """({name: array}, {key: value}) from a safetensors file; a ValueError naming the file and what is
    wrong for a malformed one (every field is checked before any array is made)."""
    with open(path, "rb") as f:
        blob = f.read()
    fail = lambda what: ValueError(f"[safetensors] {path}: {what}")  # noqa: E731
    if len(blob) < 8:
        raise fail(f"{len(blob)} bytes, shorter than the header's length")
    (length,) = struct.unpack("<Q", blob[:8])
    if length > len(blob) - 8:
        raise fail(f"a header of {length} bytes in a file of {len(blob)}")
    try:
        header = json.loads(blob[8:8 + length])
    except (UnicodeDecodeError, ValueError) as error:
        raise fail(f"the header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise fail(f"the header is a JSON {type(header).__name__}, not an object")
    data = blob[8 + length:]
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise fail("__metadata__ must be an object of strings")
    return {name: _array(name, entry, data, fail) for name, entry in header.items()}, metadata


def _array(name, entry, data, fail):
    """One tensor's array, after checking its entry against the data section."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise fail(f"{name} must be an object with dtype, shape and data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in _DTYPES:
        raise fail(f"{name} has dtype {dtype!r} (F32, F64, I64 or U8)")
    if not isinstance(shape, list) or not all(type(size) is int and size >= 0 for size in shape):
        raise fail(f"{name}'s shape must be a list of sizes >= 0, got {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets):
        raise fail(f"{name}'s data_offsets must be [begin, end], got {offsets!r}")
    begin, end = offsets
    if not 0 <= begin <= end <= len(data):
        raise fail(f"{name}'s bytes [{begin}, {end}) are outside the data ({len(data)} bytes)")
    little = np.dtype(_DTYPES[dtype]).newbyteorder("<")
    if end - begin != int(np.prod(shape, dtype=object)) * little.itemsize:
        raise fail(f"{name}: {end - begin} bytes cannot hold {dtype} {shape}")
    return np.frombuffer(data[begin:end], dtype=little).reshape(shape).astype(little.newbyteorder("="))


def save(path, arrays, metadata=None):
    """Writes {name: array} (float32, float64, int64 or uint8) atomically: beside `path`, then renamed."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in arrays.items():
        array = np.asarray(array, order="C")  # not ascontiguousarray, which makes a scalar [1]
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        code = _NAMES.get(little.dtype.str)
        if code is None:
            raise TypeError(f"[safetensors] {name} has dtype {array.dtype} (float32, float64, int64 or uint8)")
        raw = little.tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
