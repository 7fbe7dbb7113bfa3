#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (tests/fuzz/corpus/NAME/), once; the corpora are committed.

    build/apps/axiom train --config CONFIG --out RUN --steps 2 ...   # a real run to take files from
    python3 tests/fuzz/make_seeds.py RUN tests/fuzz/corpus

Seeds are small valid files of every kind each reader accepts (and a few near misses), made with
Python's standard library the way NumPy, PyTorch and the datasets' authors write them, plus the
files of a real axiom run: its checkpoint.json, the optimizer state's JSON, metrics.jsonl, weights.
"""
import gzip, io, json, os, struct, sys, zipfile


def put(corpus, name, seed, data):
    os.makedirs(os.path.join(corpus, name), exist_ok=True)
    with open(os.path.join(corpus, name, seed), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def idx(sizes, values=None):
    count = 1
    for s in sizes:
        count *= s
    body = bytes(values) if values is not None else bytes(i % 251 for i in range(count))
    return bytes([0, 0, 8, len(sizes)]) + b"".join(struct.pack(">I", s) for s in sizes) + body


def npy(descr, shape, body, version=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + body


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, (dtype, shape, body) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(body)]}
        data += body
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main(run, corpus):
    put(corpus, "idx", "images", idx([3, 2, 2]))
    put(corpus, "idx", "labels", idx([3]))
    put(corpus, "idx", "images.gz", gzip.compress(idx([2, 3, 3]), mtime=0))
    put(corpus, "idx", "truncated", idx([3, 2, 2])[:-2])

    put(corpus, "npy", "uint8", npy("|u1", [2, 3], bytes(range(6))))
    put(corpus, "npy", "float32", npy("<f4", [4], struct.pack("<4f", 1, 2, 3, 4)))
    put(corpus, "npy", "float64-v2", npy("<f8", [2, 2], struct.pack("<4d", 1, 2, 3, 4), version=2))
    put(corpus, "npy", "int64-scalar", npy("<i8", [], struct.pack("<q", 7)))
    put(corpus, "npy", "big-endian", npy(">i4", [2], struct.pack(">2i", 1, 2)))

    for name, compression in (("stored", zipfile.ZIP_STORED), ("deflated", zipfile.ZIP_DEFLATED)):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", compression) as z:
            z.writestr(zipfile.ZipInfo("images.npy", (1980, 1, 1, 0, 0, 0)), npy("|u1", [2, 2, 2], bytes(range(8))), compression)
            z.writestr(zipfile.ZipInfo("labels.npy", (1980, 1, 1, 0, 0, 0)), npy("<i8", [2], struct.pack("<2q", 0, 1)), compression)
        put(corpus, "npz", name, out.getvalue())

    record10 = bytes([3]) + bytes(i % 256 for i in range(3072))
    record100 = bytes([4, 42]) + bytes(i % 256 for i in range(3072))
    put(corpus, "cifar", "cifar10-two-records", b"\x00" + record10 + record10)
    put(corpus, "cifar", "cifar100-one-record", b"\x01" + record100)

    put(corpus, "safetensors", "two-tensors", safetensors({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                                           "b": ("I64", [1], struct.pack("<q", 5))}, {"format": "pt"}))
    put(corpus, "safetensors", "empty", safetensors({}))
    with open(os.path.join(run, "checkpoint.json")) as f:
        run_checkpoint = json.load(f)
    with open(os.path.join(run, run_checkpoint["model"]), "rb") as f:
        weights = f.read()
    put(corpus, "safetensors", "axiom-model", weights)

    put(corpus, "config", "defaults", "{}")
    put(corpus, "config", "small", json.dumps({"height": 28, "width": 28, "channels": 1, "features": 128, "heads": 4,
                                               "upper_layers": 4, "row_layers": 4, "encoder_layers": 4, "ff_multiple": 4,
                                               "inner": "transformer", "dropout": 0.0}))
    put(corpus, "config", "video-lstm", json.dumps({"height": 8, "width": 8, "channels": 4, "features": 16, "heads": 2,
                                                    "inner": "lstm", "dropout": 0.1}))

    checkpoint = dict(run_checkpoint)
    checkpoint["model"], checkpoint["optimizer"] = "model-000001.safetensors", "optimizer-000001.safetensors"
    put(corpus, "checkpoint", "axiom-run", json.dumps(checkpoint, indent=2))
    put(corpus, "checkpoint", "wrong-version", json.dumps(dict(checkpoint, version=2)))

    with open(os.path.join(run, run_checkpoint["optimizer"]), "rb") as f:
        raw = f.read()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    state = json.loads(header["__metadata__"]["optimizer"])
    # The fuzz target's Adam has parameters "w" [2, 3] and "b" [3]: a state that names them.
    state["parameters"] = [{"name": "w", "shape": [2, 3], "dtype": "float32", "step": 1},
                           {"name": "b", "shape": [3], "dtype": "float32", "step": 1}]
    put(corpus, "optimizer_state", "adam", json.dumps(state))
    put(corpus, "optimizer_state", "axiom-run", header["__metadata__"]["optimizer"])

    with open(os.path.join(run, "metrics.jsonl"), "rb") as f:
        metrics = f.read()
    put(corpus, "metrics", "axiom-run", b"\x05" + metrics)
    put(corpus, "metrics", "torn-line", b"\xff" + metrics[:-7])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
