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
    """({name: array}, {key: value}) from a safetensors file; ValueError for a malformed one."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"[safetensors] {path}: {len(blob)} bytes, shorter than the header's length")
    (length,) = struct.unpack("<Q", blob[:8])
    if length > len(blob) - 8:
        raise ValueError(f"[safetensors] {path}: a header of {length} bytes in a file of {len(blob)}")
    header = json.loads(blob[8:8 + length])
    data = blob[8 + length:]
    metadata = header.pop("__metadata__", {})
    arrays = {}
    for name, entry in header.items():
        if entry["dtype"] not in _DTYPES:
            raise ValueError(f"[safetensors] {path}: {name} has dtype {entry['dtype']} (F32, F64, I64 or U8)")
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"[safetensors] {path}: {name}'s bytes [{begin}, {end}) are outside the data ({len(data)} bytes)")
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        arrays[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"]).astype(dtype.newbyteorder("="))
    return arrays, metadata


def save(path, arrays, metadata=None):
    """Writes {name: array} (float32, float64, int64 or uint8) atomically: beside `path`, then renamed."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in arrays.items():
        array = np.ascontiguousarray(np.asarray(array))
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
