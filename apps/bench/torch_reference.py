#!/usr/bin/env python3
"""PyTorch reference for `axiom bench train` and `axiom bench sample`, and the tests' PyTorch oracle.

The same Axial Transformer as axiom's (models/axial_transformer.cpp: same presets, same block
structure, same parameter names and layouts, same parameter count, same FLOP count), written in
plain PyTorch the way a fair comparison would write it, from the paper and autograd/ops.h; nothing
here calls axiom. The benches run it in float32 and it prints the same figures under the same case
names; the tests import it (tests/python/conftest.py puts apps/bench on sys.path):
test_axial_transformer_vs_torch.py loads axiom's weights into it, in float64, with three channels
and the channel encoder, and compares logits, loss and gradients; test_ops_vs_torch.py compares
axiom's attention and shift ops with attention() and shift() here.

Run axiom's bench and this one on the same machine, with the same thread count, and compare:

    axiom bench train --config small --threads 2
    /usr/bin/python3 apps/bench/torch_reference.py train --config small --threads 2

    axiom bench sample --config small --threads 2
    /usr/bin/python3 apps/bench/torch_reference.py sample --config small --threads 2

    # fast and naive sampling make the same images (a tiny model with random weights)
    /usr/bin/python3 apps/bench/torch_reference.py sample --config tiny --check

Options: train [--batch N] [--steps 5]; sample [--naive-rows 2] [--check [--check-rows 3]]; both
[--threads 2] [--json] (one JSON object per line and figure, as `axiom bench --json`) and
[--device cpu|cuda] (as axiom's --device: the model, its inputs and the sampler's uniforms on the GPU,
the clock read after torch.cuda.synchronize(); the peak of PyTorch's CUDA tensors is reported as
peak_tensor_memory, as axiom reports its own, and the sgemm baseline is torch.mm on the GPU).

Peak memory is the whole process's resident peak (VmHWM), as axiom's; with PyTorch that includes
its libraries, a few hundred MiB before any tensor.

PyTorch runs with glibc's malloc told to keep freed memory (see KEEP_MEMORY at the end): by default
every large tensor goes back to the system when freed and costs page faults again, which more than
doubles PyTorch's step time here. --system-malloc measures the defaults instead.

Both programs do their matrix products through a BLAS library; Debian's PyTorch calls the system
BLAS (`BLAS_INFO=generic` in torch.__config__.show()), which is OpenBLAS where libopenblas0 provides
libblas.so.3. The header line says which BLAS is loaded, and for OpenBLAS its kernel table and thread
count (--threads sets both PyTorch's and OpenBLAS's threads; axiom's --threads sets its own, on which
both its matrix libraries compute: OpenBLAS on one thread per band). Compare with
the same kernels: OPENBLAS_CORETYPE picks them when the library loads. axiom may switch to faster
kernels than OpenBLAS chose (core/cpu/blas.cpp; `axiom bench ops` prints the ones it uses), so run
this script with OPENBLAS_CORETYPE set to that name, e.g.

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 apps/bench/torch_reference.py train --config small

Needs only PyTorch (tested with Debian's python3-torch 1.13) and the standard library.
"""

import argparse
import ctypes
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VALUES = 256  # 8-bit pixel values
ROW_AXIS, COLUMN_AXIS = 2, 1  # on [B, H, W, D]: attend along W (a row) or along H (a column)


# --- configuration: models/config.cpp ------------------------------------------------------------

PRESETS = {
    "tiny": dict(features=64, heads=4, upper_layers=2, row_layers=2),
    "small": dict(features=128, heads=4, upper_layers=4, row_layers=4),
    "medium": dict(features=256, heads=8, upper_layers=8, row_layers=4),
}
PRESET_BATCH = {"tiny": 16, "small": 32, "medium": 16}  # apps/bench/bench_train.cpp


def preset(name):
    # Every preset: 28 x 28, one channel, feed-forward width 4D, dropout 0 (so no dropout layers here).
    # More channels (the tests' 3) add the channel encoder, with encoder_layers blocks.
    return dict(height=28, width=28, channels=1, encoder_layers=0, ff_multiple=4, **PRESETS[name])


# --- the operations: autograd/ops.h --------------------------------------------------------------


def attention(qkv, axis, heads, causal=False, bias=None):
    """Multi-head self-attention along `axis` from packed [q | k | v] projections [..., 3D] -> [..., D].

    Each third holds the heads side by side, as axiom's. The other axes are batch axes; bias is added
    to the scores [..., heads, L, L]; causal is inclusive: query i sees keys 0..i.
    """
    axis = axis % qkv.dim()
    x = qkv.movedim(axis, -2)  # [..., L, 3D]  (a view)
    d = x.shape[-1] // 3
    dh = d // heads
    q, k, v = (part.unflatten(-1, (heads, dh)).transpose(-2, -3) for part in x.split(d, dim=-1))  # [..., heads, L, Dh]
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))  # [..., heads, L, L]
    if bias is not None:
        scores = scores + bias
    if causal:  # True where key j > query i is hidden
        length = scores.shape[-1]
        hidden = torch.ones(length, length, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(hidden, -math.inf)
    mixed = torch.matmul(scores.softmax(dim=-1), v)  # [..., heads, L, Dh]
    return mixed.transpose(-2, -3).movedim(-3, axis).flatten(-2)  # [..., L, heads, Dh] -> L back at axis -> [..., D]


def shift(x, axis, amount):
    """x moved `amount` places along `axis`, zeros coming in: shift([1, 2, 3], 0, 1) = [0, 1, 2]."""
    length = x.shape[axis]
    if amount >= 0:
        return torch.cat([torch.zeros_like(x.narrow(axis, 0, amount)), x.narrow(axis, 0, length - amount)], axis)
    return torch.cat([x.narrow(axis, -amount, length + amount), torch.zeros_like(x.narrow(axis, 0, -amount))], axis)


def shift_right(x):  # [B, H, W, D]: a zero column in on the left, the last column out
    return shift(x, 2, 1)


def shift_down(x):  # [B, H, W, D]: a zero row in on top, the last row out
    return shift(x, 1, 1)


# --- the model: nn/, models/axial_transformer.cpp, models/image_model.cpp ------------------------
# Names and layouts are axiom's, so that a state_dict moves across unchanged, from axiom's
# safetensors files (tests/python/test_axial_transformer_vs_torch.py does): a Dense weight is
# [in, out], the packed projections of attention are [q | k | v] with the heads side by side.


class Dense(nn.Module):
    """x @ weight + bias, weight [in, out] (nn.Linear's is [out, in]); starts uniform in +-1/sqrt(in), as axiom's."""

    def __init__(self, inputs, outputs):
        super().__init__()
        bound = 1.0 / math.sqrt(inputs)
        self.weight = nn.Parameter(torch.empty(inputs, outputs).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(outputs).uniform_(-bound, bound))

    def forward(self, x):  # [..., in] -> [..., out]: x @ weight + bias, the bias added by the product
        if x.dim() == 2:  # [N, in], as the sampler's steps: one addmm, no transposed view to make
            return torch.addmm(self.bias, x, self.weight)
        return F.linear(x, self.weight.t(), self.bias)  # nn.Linear's call, its weight being [out, in]

    def zero_(self):  # axiom's init_scale = 0
        nn.init.zeros_(self.weight), nn.init.zeros_(self.bias)


class FactorizedPosition(nn.Module):
    """Additively factorized position embedding: axis_1[i] + axis_2[j] at pixel (i, j)."""

    def __init__(self, height, width, d):
        super().__init__()
        self.axis_1 = nn.Parameter(torch.randn(height, d) * 0.02)  # [H, D], the rows
        self.axis_2 = nn.Parameter(torch.randn(width, d) * 0.02)  # [W, D], the columns

    def grid(self):  # [H, W, D]
        return self.axis_1[:, None, :] + self.axis_2[None, :, :]


class AxialAttention(nn.Module):
    """Multi-head attention along one axis of x [B, H, W, D]; the other axes are batch axes."""

    def __init__(self, d, heads, axis, masked, length):
        super().__init__()
        self.qkv = Dense(d, 3 * d)  # queries, keys and values at once: [q | k | v]
        self.out = Dense(d, d)
        self.heads, self.axis, self.masked, self.length = heads, axis, masked, length

    def forward(self, x):  # [B, H, W, D] -> [B, H, W, D]
        return self.out(attention(self.qkv(x), self.axis, self.heads, self.masked))

    def step(self, x_t, cache):
        """Masked attention for the next position t of N lines: x_t [N, D] -> [N, D].

        cache = {"keys": [N, heads, L, Dh], "values": same, "length": t}, filled one position a step.
        """
        n, d = x_t.shape
        dh, t = d // self.heads, cache["length"]
        q, k, v = (part.reshape(n, self.heads, dh) for part in self.qkv(x_t).split(d, dim=-1))
        if t == 0:
            cache["keys"] = x_t.new_empty(n, self.heads, self.length, dh)
            cache["values"] = x_t.new_empty(n, self.heads, self.length, dh)
        cache["keys"][:, :, t] = k
        cache["values"][:, :, t] = v
        cache["length"] = t + 1
        keys, values = cache["keys"][:, :, : t + 1], cache["values"][:, :, : t + 1]  # [N, heads, t+1, Dh]
        # no mask: the cache holds positions 0..t, exactly what the causal mask lets t see
        scores = torch.matmul(q.unsqueeze(2), keys.transpose(-1, -2)) * (1.0 / math.sqrt(dh))  # [N, heads, 1, t+1]
        mixed = torch.matmul(scores.softmax(dim=-1), values)  # [N, heads, 1, Dh]
        return self.out(mixed.reshape(n, d))


class AttentionBlock(nn.Module):
    """x + Attention(LayerNorm(x)): pre-LayerNorm (nn/blocks.h)."""

    def __init__(self, d, heads, axis, masked, length):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.attention = AxialAttention(d, heads, axis, masked, length)
        self.attention.out.zero_()  # axiom starts every residual branch's output at zero

    def forward(self, x):  # [B, H, W, D]
        return x + self.attention(self.norm(x))

    def step(self, x_t, cache):  # [N, D]
        return x_t + self.attention.step(self.norm(x_t), cache)


class FeedforwardBlock(nn.Module):
    """x + Dense_D(GELU(Dense_4D(LayerNorm(x)))), the exact (erf) GELU (nn/blocks.h)."""

    def __init__(self, d, multiple):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up, self.down = Dense(d, multiple * d), Dense(multiple * d, d)
        self.down.zero_()

    def forward(self, x):  # [..., D]
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d, heads, multiple, axis, masked, length):
        super().__init__()
        self.attention = AttentionBlock(d, heads, axis, masked, length)
        self.feedforward = FeedforwardBlock(d, multiple)

    def forward(self, x):  # [B, H, W, D] -> [B, H, W, D]
        return self.feedforward(self.attention(x))

    def step(self, x_t, cache):  # masked blocks only: one position of N lines, [N, D] -> [N, D]
        return self.feedforward(self.attention.step(x_t, cache))


class AxialTransformer(nn.Module):
    """The Axial Transformer ("Axial Attention in Multidimensional Transformers", Ho et al., 2019,
    arXiv:1912.12180, section 3), as models/axial_transformer.cpp: on images of values 0..255, the
    logits [B, H, W, 256] of one channel of each image.

    h = Embed(x_c); u = h + outer positions (+ the channel encoder's context, when C > 1)
    u = (unmasked row block, then masked column block) x upper_layers/2      outer decoder
    z = ShiftRight(h) + ShiftDown(u) + inner positions
    z = masked row block x row_layers                                         inner decoder
    logits = Dense_256(LayerNorm(z))

    c: a preset() dict; dtype: the parameters' (float32 for the benches, float64 for the tests).
    """

    def __init__(self, c, dtype=torch.float32):
        super().__init__()
        self.c, self.channels = c, c["channels"]
        d, heads, ff, h, w = c["features"], c["heads"], c["ff_multiple"], c["height"], c["width"]
        # in the order axiom registers them: a state_dict's names come in the same order
        self.embedding = nn.Embedding(VALUES, d)  # starts normal(0, 1), as axiom's
        self.outer_position = FactorizedPosition(h, w, d)
        self.outer = nn.ModuleList()
        for _ in range(c["upper_layers"] // 2):
            self.outer.append(TransformerBlock(d, heads, ff, ROW_AXIS, False, w))
            self.outer.append(TransformerBlock(d, heads, ff, COLUMN_AXIS, True, h))
        self.inner_position = FactorizedPosition(h, w, d)
        self.inner = nn.ModuleList(TransformerBlock(d, heads, ff, ROW_AXIS, True, w) for _ in range(c["row_layers"]))
        if self.channels > 1:  # the channel encoder (section 3.2.2)
            self.channel_values = nn.Embedding(self.channels * VALUES, d)  # value v of channel k: row v + 256 k
            self.channel_marker = nn.Embedding(self.channels, d)  # which channel is predicted
            self.encoder_position = FactorizedPosition(h, w, d)
            self.encoder = nn.ModuleList(
                TransformerBlock(d, heads, ff, ROW_AXIS if i % 2 == 0 else COLUMN_AXIS, False, w if i % 2 == 0 else h)
                for i in range(c["encoder_layers"])
            )
        self.final_norm = nn.LayerNorm(d)
        self.logits = Dense(d, VALUES)
        self.logits.zero_()  # with the zeroed residual outputs: an untrained model predicts 8.00 bits/dim
        self.to(dtype)

    def embed(self, values):  # int64 [...] -> [..., D]
        return self.embedding(values)

    def channel_of_each(self, images, channel):
        """The values to predict: images [B, H, W] (one channel, channel None), or each image's
        channel of images [B, C, H, W], channel [B] -> [B, H, W]."""
        if channel is None:
            return images
        return images[torch.arange(images.shape[0], device=images.device), channel]

    def encode(self, images, channel):
        """The channel encoder's context [B, H, W, D] for predicting channel [B] of images [B, C, H, W]:
        the channels before each image's own, embedded and summed, its marker and positions, then
        the encoder's unmasked blocks (models/image_model.cpp, encode)."""
        which = torch.arange(self.channels, device=images.device).reshape(1, -1, 1, 1)  # [1, C, 1, 1]
        values = self.channel_values(images + VALUES * which)  # [B, C, H, W, D]
        earlier = (which.reshape(1, -1) < channel.reshape(-1, 1)).to(values.dtype)  # [B, C]: k < c_b
        context = (values * earlier[:, :, None, None, None]).sum(1)  # [B, H, W, D]
        context = context + self.channel_marker(channel)[:, None, None, :] + self.encoder_position.grid()
        for block in self.encoder:
            context = block(context)
        return context

    def outer_decoder(self, h, context=None):  # h [B, H, W, D] (+ context, same) -> u [B, H, W, D]
        u = h + self.outer_position.grid()
        if context is not None:
            u = u + context
        for block in self.outer:
            u = block(u)
        return u

    def inner_decoder(self, z):  # [B, rows, W, D] -> logits [B, rows, W, 256]
        for block in self.inner:
            z = block(z)
        return self.logits(self.final_norm(z))

    def forward(self, images, channel=None):
        """int64 images [B, H, W], or [B, C, H, W] with channel [B] -> logits [B, H, W, 256]."""
        h = self.embed(self.channel_of_each(images, channel))  # [B, H, W, D]
        context = self.encode(images, channel) if self.channels > 1 else None
        z = shift_right(h) + shift_down(self.outer_decoder(h, context)) + self.inner_position.grid()
        return self.inner_decoder(z)

    def loss(self, images, channel=None):  # bits/dim, the mean over every pixel of the predicted channels
        logits = self(images, channel)
        targets = self.channel_of_each(images, channel)
        return F.cross_entropy(logits.reshape(-1, VALUES), targets.reshape(-1)) / math.log(2.0)

    # --- the steps of the semi-parallel sampler, one channel (models/axial_transformer.cpp) ---------

    def start_outer_rows(self):  # one key/value cache per masked column block
        return [{"length": 0} for _ in self.outer[1::2]]

    def outer_step(self, h_row, i, caches):
        """Row i of u from row i of h [N, W, D]: the row blocks see the row alone, the masked column
        blocks attend over the cached rows 0..i (models/axial_transformer.cpp, outer_step)."""
        n, w, d = h_row.shape
        u = h_row + self.outer_position.grid()[i]
        for k, block in enumerate(self.outer):
            if k % 2 == 0:  # unmasked row block on a batch of one-row images [N, 1, W, D]
                u = block(u.unsqueeze(1)).squeeze(1)
            else:  # masked column block: N * W columns, one step down each
                u = block.step(u.reshape(n * w, d), caches[k // 2]).reshape(n, w, d)
        return u

    def start_inner_row(self):  # one key/value cache per inner block
        return [{"length": 0} for _ in self.inner]

    def inner_step(self, z_j, caches):  # pixel j of N images: [N, D] -> logits [N, 256]
        for block, cache in zip(self.inner, caches):
            z_j = block.step(z_j, cache)
        return self.logits(self.final_norm(z_j))


def parameter_count_formula(c):
    """What axiom's model holds, counted from its structure (the script checks it equals ours)."""
    d, f = c["features"], c["ff_multiple"] * c["features"]
    positions = c["height"] + c["width"]
    block = (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (2 * d) + (d * f + f) + (f * d + d)
    blocks = c["upper_layers"] + c["row_layers"]
    return VALUES * d + 2 * positions * d + blocks * block + 2 * d + (d * VALUES + VALUES)


# --- FLOPs: the products' arithmetic, from the architecture (axiom counts the same products on its
# shape-only device, core/meta/meta.h: for the axial presets the two agree; a step is three forward
# passes) ------------------------------------------------------------------------------------------


def forward_flops(c, batch):
    d, f = c["features"], c["ff_multiple"] * c["features"]

    def block(length):  # per position: q, k, v, out projections; scores and mixing; feed-forward
        return 2 * 4 * d * d + 2 * 2 * length * d + 2 * 2 * d * f

    per_position = sum(block(c["width"] if i % 2 == 0 else c["height"]) for i in range(c["upper_layers"]))
    per_position += c["row_layers"] * block(c["width"])
    per_position += 2 * VALUES * d  # logits
    return per_position * batch * c["height"] * c["width"]


# --- timing, memory and reporting: apps/bench/bench.h --------------------------------------------


def seconds_per_call(fn, trials=5, min_seconds=0.05):
    """One warm-up call, then the median of `trials` timings, each repeating fn for >= min_seconds."""
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-9)
    repeats = max(1, int(min_seconds / once))
    per_call = []
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        per_call.append((time.perf_counter() - start) / repeats)
    return sorted(per_call)[trials // 2]  # the upper median for an even count, as nth_element


def peak_memory_bytes():  # VmHWM: the peak resident memory of this process
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) * 1024  # "VmHWM:   123456 kB"
    return 0.0


def reset_peak_memory():  # restarts VmHWM from the current resident size (Linux)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


class Reporter:
    def __init__(self, as_json):
        self.json = as_json

    def note(self, line):
        if not self.json:
            print(line, flush=True)

    def report(self, bench, case, unit, value, baseline=None, baseline_name=""):
        if self.json:
            line = {"bench": bench, "case": case, "value": value, "unit": unit}
            if baseline is not None:
                line["baseline"], line["ratio"] = baseline, value / baseline
            print(json.dumps(line), flush=True)
        elif baseline is not None:
            print(f"  {case:<40s} {value:10.2f} {unit:<8s}  {baseline_name} {baseline:10.2f}  ratio {value / baseline:.2f}", flush=True)
        else:
            print(f"  {case:<40s} {value:10.2f} {unit:<8s}", flush=True)


def openblas():
    """The OpenBLAS library this process loaded (through torch), via ctypes, or None."""
    with open("/proc/self/maps") as maps:
        paths = [line.split()[-1] for line in maps if "openblas" in line and ".so" in line]
    for path in dict.fromkeys(paths):
        lib = ctypes.CDLL(path)  # already loaded: this only looks it up
        # NumPy's wheels bring an OpenBLAS whose names carry a suffix: not the one torch calls
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib
    return None


def blas_description():
    """Which BLAS does torch's matrix products, and with which kernels and threads."""
    lib = openblas()
    if lib is None:  # not OpenBLAS: say what the build reports (MKL, a generic BLAS, ...)
        build = torch.__config__.show()
        info = build.split("BLAS_INFO=", 1)[1].split(",", 1)[0] if "BLAS_INFO=" in build else "unknown"
        return f"BLAS {info}"
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    chosen = f"OPENBLAS_CORETYPE={coretype}" if coretype else "OPENBLAS_CORETYPE unset"
    return f"OpenBLAS kernels {lib.openblas_get_corename().decode()} ({chosen}), {lib.openblas_get_num_threads()} OpenBLAS threads"


def set_threads(count):
    """As axiom's --threads: one count for PyTorch's own threads and for OpenBLAS's."""
    torch.set_num_threads(count)
    torch.set_num_interop_threads(1)
    lib = openblas()
    if lib is not None:  # torch.set_num_threads does not reach OpenBLAS's own thread pool
        lib.openblas_set_num_threads(count)


def device_description(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"


def header(reporter, command, config_name, c, model, extra):
    count = sum(p.numel() for p in model.parameters())
    assert count == parameter_count_formula(c), f"{count} parameters, axiom's structure gives {parameter_count_formula(c)}"
    reporter.note(
        f"torch_reference.py {command} --config {config_name}: PyTorch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"{blas_description()}; {count:,} parameters; {extra}"
    )


# --- train ---------------------------------------------------------------------------------------


def finish(device):  # waits for the device's queued work, so the clock reads the work's end
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def sgemm_gflops(m, k, n, gen, device):  # the model's largest product, [B*H*W, D] @ [D, 4D], as raw torch.mm
    a, b = torch.randn(m, k, generator=gen).to(device), torch.randn(k, n, generator=gen).to(device)
    c = torch.empty(m, n, device=device)

    def product():
        torch.mm(a, b, out=c)
        finish(device)

    seconds = seconds_per_call(product, 5, 0.2)
    return 2.0 * m * n * k / seconds / 1e9


def bench_train(args, reporter):
    c = preset(args.config)
    batch = args.batch if args.batch > 0 else PRESET_BATCH[args.config]
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = AxialTransformer(c).train().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
    header(reporter, "train", args.config, c, model,
           f"on {device_description(device)}, batch {batch}, autocast {args.autocast}, {args.steps} timed steps after 2 warm-up steps")

    gen = torch.Generator().manual_seed(11)
    images = torch.randint(0, VALUES, (4 * batch, c["height"], c["width"]), generator=gen, dtype=torch.uint8).to(device)
    gemm = sgemm_gflops(batch * c["height"] * c["width"], c["features"], c["ff_multiple"] * c["features"], gen, device)

    steps_done = 0

    # --autocast bfloat16: PyTorch's mixed precision (matrix products in bfloat16, float32 weights)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.autocast == "bfloat16")

    def step():  # forward, loss, backward, Adam, on the next of the four batches
        nonlocal steps_done
        first = (steps_done % 4) * batch
        with autocast:
            loss = model.loss(images[first : first + batch].long())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        steps_done += 1
        finish(device)

    # As axiom: one warm-up step, reset the peak, then seconds_per_call's own warm-up and the timed steps.
    step()
    reset_peak_memory()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    step_seconds = seconds_per_call(step, args.steps, 0)
    peak = peak_memory_bytes()
    flops = 3 * forward_flops(c, batch)  # backward costs twice the forward

    name = args.config
    reporter.report("train", f"{name}_step", "s", step_seconds)
    reporter.report("train", f"{name}_images_per_second", "img/s", batch / step_seconds)
    reporter.report("train", f"{name}_peak_memory", "MiB", peak / (1 << 20))
    if device.type == "cuda":
        reporter.report("train", f"{name}_peak_tensor_memory", "MiB", torch.cuda.max_memory_allocated(device) / (1 << 20))
    reporter.report("train", f"{name}_gflop_per_step", "GFLOP", flops / 1e9)
    reporter.report("train", f"{name}_gflops", "GFLOP/s", flops / step_seconds / 1e9, gemm, "sgemm")


# --- sample: models/sampler.cpp ------------------------------------------------------------------


def pixel_uniforms(c, count, seed, device):  # a uniform in [0, 1) for every pixel: [N, H, W]
    gen = torch.Generator().manual_seed(seed)  # drawn on the CPU: the same uniforms on every device
    return torch.rand(count, c["height"], c["width"], generator=gen, dtype=torch.float64).to(device)


def model_device(model):
    return next(model.parameters()).device


def pick(logits, u, temperature=1.0):  # axiom's categorical: the first v whose cumulative softmax passes u
    cdf = torch.cumsum(torch.softmax(logits.double() / temperature, dim=-1), dim=-1)  # [N, 256]
    return torch.searchsorted(cdf, u[:, None] * cdf[:, -1:], right=True).squeeze(-1).clamp(max=VALUES - 1)  # [N]


@torch.no_grad()
def sample_naive(model, count, seed=0, rows=None):
    """The whole model once per pixel. rows: stop after that many rows (the rest stay 0)."""
    c = model.c
    device = model_device(model)
    u = pixel_uniforms(c, count, seed, device)
    images = torch.zeros(count, c["height"], c["width"], dtype=torch.int64, device=device)
    for i in range(rows or c["height"]):
        for j in range(c["width"]):
            images[:, i, j] = pick(model(images)[:, i, j], u[:, i, j])
    return images


@torch.no_grad()
def sample_fast(model, count, seed=0, rows=None, record=None):
    """Semi-parallel (section 3.2.1), as axiom's sampler: the outer decoder once per row on that row
    alone, with a key/value cache per masked column block, and the inner decoder once per pixel on
    that pixel alone, with a key/value cache per inner block. record: a dict that receives each
    pixel's logits under (i, j), for --check."""
    c = model.c
    device = model_device(model)
    u = pixel_uniforms(c, count, seed, device)
    images = torch.zeros(count, c["height"], c["width"], dtype=torch.int64, device=device)
    positions = model.inner_position.grid()  # [H, W, D]
    outer_caches = model.start_outer_rows()
    above = positions.new_zeros(count, c["width"], c["features"])  # ShiftDown(u) on row 0: the zero row on top
    for i in range(rows or c["height"]):
        if i > 0:  # row i - 1 is final: the outer decoder steps down by it
            above = model.outer_step(model.embed(images[:, i - 1]), i - 1, outer_caches)  # [N, W, D]
        caches = model.start_inner_row()
        for j in range(c["width"]):
            z = above[:, j] + positions[i, j]  # ShiftRight(h) at (i, j) is the embedding of (i, j-1)
            if j > 0:
                z = z + model.embed(images[:, i, j - 1])
            logits = model.inner_step(z, caches)  # [N, 256]
            if record is not None:
                record[i, j] = logits
            images[:, i, j] = pick(logits, u[:, i, j])
    return images


def bench_sample(args, reporter):
    c = preset(args.config)
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = AxialTransformer(c).eval().to(device)
    rows = args.naive_rows
    header(
        reporter, "sample", args.config, c, model,
        f"on {device_description(device)}, ms per {c['height']}x{c['width']} image; the naive sampler is timed on the first {rows} rows "
        f"({rows * c['width']} pixels) and scaled to the whole image, the fast one runs the whole image",
    )
    pixels = c["height"] * c["width"]
    with torch.no_grad():
        for batch in (1, 16):
            warm = torch.zeros(batch, c["height"], c["width"], dtype=torch.int64, device=device)
            model(warm)  # warm-up: allocator, lazy initialisation
            sample_fast(model, batch, rows=1)
            finish(device)

            start = time.perf_counter()
            sample_naive(model, batch, rows=rows)
            finish(device)
            naive = (time.perf_counter() - start) * pixels / (rows * c["width"]) / batch
            reporter.report("sample", f"{args.config}_naive_batch{batch}", "ms/image", naive * 1e3)

            start = time.perf_counter()
            sample_fast(model, batch)
            finish(device)
            fast = (time.perf_counter() - start) / batch
            reporter.report("sample", f"{args.config}_fast_batch{batch}", "ms/image", fast * 1e3)


def check(args):
    """Fast and naive sampling make identical images (a model with random, non-zero weights)."""
    c = preset(args.config)
    torch.manual_seed(1)
    model = AxialTransformer(c).eval()
    model_param_count = sum(p.numel() for p in model.parameters())
    assert model_param_count == parameter_count_formula(c), (model_param_count, parameter_count_formula(c))
    images = torch.randint(0, VALUES, (2, c["height"], c["width"]))
    with torch.no_grad():
        bits = model.loss(images).item()
    assert abs(bits - 8.0) < 1e-5, f"an untrained model should give 8.00 bits/dim, got {bits}"

    model = model.double()
    with torch.no_grad():
        for p in model.parameters():  # random, non-zero weights: the zero-initialised layers too
            p.copy_(torch.randn(p.shape, dtype=p.dtype) * (0.5 if p.dim() == 1 else 1.0 / math.sqrt(p.shape[-1])))
    rows, count = args.check_rows, 3
    record = {}
    fast = sample_fast(model, count, seed=5, rows=rows, record=record)
    naive = sample_naive(model, count, seed=5, rows=rows)
    assert torch.equal(fast, naive), f"fast and naive samples differ:\n{fast[:, :rows]}\n{naive[:, :rows]}"
    # and the stepped inner decoder gives what the whole model gives for the final image
    with torch.no_grad():
        full = model(fast)
    worst = max((record[i, j] - full[:, i, j]).abs().max().item() for (i, j) in record)
    assert worst < 1e-9, f"stepped logits differ from the whole model's by {worst}"
    distinct = fast[:, :rows].unique().numel()
    print(
        f"check ({args.config}, float64, random weights, {count} images, {rows} rows): untrained loss {bits:.4f} bits/dim; "
        f"fast == naive ({distinct} distinct values drawn); stepped vs whole-model logits max |diff| {worst:.2e}: OK"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="one training step: time, images/s, peak memory, GFLOP/s next to sgemm")
    train.add_argument("--config", choices=sorted(PRESETS), default="small")
    train.add_argument("--batch", type=int, default=0, help="images per step (0: the preset's: tiny 16, small 32, medium 16)")
    train.add_argument("--steps", type=int, default=5, help="timed steps (the median is reported)")
    train.add_argument("--autocast", choices=["off", "bfloat16"], default="off",
                       help="bfloat16: torch.autocast on the CPU (as axiom bench train --precision bfloat16)")
    sample = commands.add_parser("sample", help="ms per image of the naive and the fast (cached) sampler")
    sample.add_argument("--config", choices=sorted(PRESETS), default="small")
    sample.add_argument("--naive-rows", type=int, default=2, help="rows the naive sampler is timed on")
    sample.add_argument("--check", action="store_true", help="only check that fast and naive sampling agree")
    sample.add_argument("--check-rows", type=int, default=3, help="rows --check samples")
    for command in (train, sample):
        command.add_argument("--threads", type=int, default=2)
        command.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the model runs (cuda: the first GPU)")
        command.add_argument("--json", action="store_true", help="one JSON object per line and figure")
    args = parser.parse_args()

    if getattr(args, "device", "cpu") == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device here")
    set_threads(args.threads)
    reporter = Reporter(args.json)
    if args.command == "train":
        bench_train(args, reporter)
    elif args.check:
        check(args)
    else:
        bench_sample(args, reporter)


# glibc's malloc returns every large tensor's memory to the system when it is freed (mmap/munmap),
# so each training step pays a page fault per 4 KiB again: 5.8 s instead of 2.3 s for `small` on
# the machine of the README. These settings make it keep and reuse that memory, as axiom's own
# allocator does; they must be in the environment before the process starts, so the script
# starts itself again with them (--system-malloc keeps glibc's defaults).
KEEP_MEMORY = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(16 << 30), "MALLOC_TOP_PAD_": str(1 << 30)}


def with_memory_kept():
    import sys

    if "--system-malloc" in sys.argv:
        sys.argv.remove("--system-malloc")
    elif any(os.environ.get(k) != v for k, v in KEEP_MEMORY.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **KEEP_MEMORY})


if __name__ == "__main__":
    with_memory_kept()
    main()
