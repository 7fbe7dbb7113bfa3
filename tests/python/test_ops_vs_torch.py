"""Every case of axiom's op table, in axiom and in PyTorch, on the same inputs.

The cases are the C++ suites' own (tests/autograd/op_table.cpp, in Python as axiom._axiom._op_table):
each holds its inputs, the op in axiom, and the same in PyTorch as a Python expression over the inputs
a, b, c, ..., written from the op's definition in autograd/ops.h, not from axiom's code. A new op gets
its cases, and its PyTorch spelling, there and nowhere else; the C++ coverage test makes sure that every
op has a case. For each case: forward values, gradients (for a random upstream gradient v) and second
derivatives (the gradient of <grad, u> for a random u) in float64, and forward values in float32 with
float32 tolerances. PyTorch is Debian's python3-torch.

The last table is not a list of ops: it checks the Python spellings of a few of them (a number on the
left of an operator, indexing with None and ..., keyword arguments, NumPy arrays shared without a
copy) against PyTorch's.
"""
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import axiom
import torch_reference
from axiom import _axiom

rng = np.random.default_rng(7)


# --- the helpers that the op table's PyTorch expressions use --------------------------------------

def attention(qkv, axis, heads, causal=False, bias=None):
    return torch_reference.attention(qkv, axis, heads, causal, None if bias is None else bias.to(qkv.dtype))


def queries(qkv, axis, heads):
    """The queries split into heads, the line's axis next to the features: [..., H, L, Dh]."""
    x = qkv.movedim(axis, -2)
    d = x.shape[-1] // 3
    return x[..., :d].unflatten(-1, (heads, d // heads)).transpose(-2, -3)


def pad(x, axis, before, after, value=0.0):
    axis = axis % x.dim()
    widths = [0, 0] * (x.dim() - 1 - axis) + [before, after]
    return F.pad(x, widths, value=value)


def shift(x, axis, amount):
    """torch_reference.shift, where a shift by the whole length or more leaves only zeros (a zero
    gradient, which x * 0 keeps in the graph)."""
    if abs(amount) >= x.shape[axis]:
        return x * 0.0
    return torch_reference.shift(x, axis, amount)


def cross_entropy(logits, targets, smoothing=0.0, reduction="mean"):
    classes = logits.shape[-1]
    flat = F.cross_entropy(logits.reshape(-1, classes), targets.reshape(-1), label_smoothing=smoothing, reduction=reduction)
    return flat.reshape(targets.shape) if reduction == "none" else flat


def local_bias(block_rows, block_columns, grid_rows, grid_columns):
    """Local attention's mask on a grid, as a bias [L, L] of 0 (seen) and -inf, from nn/local.h's
    definition: a query block's memory is itself, the blocks left and right of it and the three
    above; a query sees the positions of that memory that are not after it in raster order."""
    length = grid_rows * grid_columns
    bias = torch.full((length, length), -math.inf, dtype=torch.float64)
    for query in range(length):
        i, j = divmod(query, grid_columns)
        for key in range(query + 1):
            r, c = divmod(key, grid_columns)
            row_step = i // block_rows - r // block_rows
            column_step = abs(j // block_columns - c // block_columns)
            if row_step in (0, 1) and column_step <= 1:
                bias[query, key] = 0.0
    return bias


# --- running one case on both sides ------------------------------------------------------------------

@dataclass
class Case:
    op: str                # the op of autograd/ops.h or the Tensor method it checks
    what: str              # what is particular about the inputs
    inputs: list           # axiom tensors; those that require a gradient are differentiated
    ours: Callable         # f(list of axiom tensors)
    theirs: Callable       # f(list of torch tensors, axiom's output as a torch tensor)
    tolerance: float = 1e-9  # relative and absolute, float64


def from_the_op_table(case):
    def theirs(inputs, ours):
        names = dict(zip("abcdefg", inputs), ours=ours)
        return eval(case.pytorch, {"torch": torch, "F": F, "math": math, **HELPERS}, names)  # noqa: S307
    return Case(case.op, case.what, list(case.inputs), case, theirs)


HELPERS = dict(attention=attention, queries=queries, pad=pad, shift=shift, cross_entropy=cross_entropy, local_bias=local_bias)
OP_TABLE = _axiom._op_table()


def case_id(case):
    return f"{case.op}: {case.what}" if case.what else case.op


def as_numpy(value):
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        # clone(): PyTorch returns some zero derivatives as "zero tensors" that hold no memory,
        # which .numpy() would read from address 0
        return value.detach().clone().numpy()
    return np.array(value.detach())


def to_torch(x, dtype=None):
    value = torch.from_numpy(as_numpy(x))
    if dtype is not None and value.is_floating_point():
        value = value.to(dtype)
    return value.requires_grad_(x.requires_grad)


def assert_close(ours, theirs, tolerance, what):
    ours, theirs = as_numpy(ours), as_numpy(theirs)
    if theirs is None:
        theirs = np.zeros_like(ours) if ours is not None else None
    if ours is None:
        ours = np.zeros_like(theirs) if theirs is not None else None
    if ours is None:
        return
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch's {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance, err_msg=what)


def derivatives(grad, outputs, inputs, v, u):
    """First derivatives of <outputs, v> with a graph, and the gradient of <first, u>."""
    wanted = [x for x in inputs if x.requires_grad]
    first = grad(outputs, wanted, v, create_graph=True, allow_unused=True)
    terms = [(g * w).sum() for g, w in zip(first, u) if g is not None and g.requires_grad]
    if not terms:
        return first, [None] * len(wanted)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return first, grad(total, wanted, allow_unused=True)


def ours_grad(outputs, inputs, v=None, **options):
    return axiom.grad(outputs, list(inputs), v, **options)


def theirs_grad(outputs, inputs, v=None, **options):
    return torch.autograd.grad(outputs, list(inputs), v, **options)


def check_float64(case):
    ours_in = case.inputs
    theirs_in = [to_torch(x) for x in ours_in]
    ours_out = case.ours(ours_in)
    theirs_out = case.theirs(theirs_in, to_torch(ours_out.detach()))
    assert_close(ours_out, theirs_out, case.tolerance, f"{case_id(case)}: forward")
    if not any(x.requires_grad for x in ours_in):
        return
    v = rng.uniform(-1, 1, size=tuple(ours_out.shape))
    wanted = [x for x in ours_in if x.requires_grad]
    u = [rng.uniform(-1, 1, size=tuple(x.shape)) for x in wanted]
    ours_first, ours_second = derivatives(ours_grad, ours_out, ours_in, axiom.from_numpy(v), [axiom.from_numpy(w) for w in u])
    theirs_first, theirs_second = derivatives(theirs_grad, theirs_out, theirs_in, torch.from_numpy(v), [torch.from_numpy(w) for w in u])
    for k, (a, b) in enumerate(zip(ours_first, theirs_first)):
        assert_close(a, b, case.tolerance, f"{case_id(case)}: gradient of input {k}")
    for k, (a, b) in enumerate(zip(ours_second, theirs_second)):
        assert_close(a, b, 10 * case.tolerance, f"{case_id(case)}: second derivative of input {k}")


def check_float32(case):
    ours_in = [x.detach().to(axiom.float32) if x.dtype == axiom.float64 else x for x in case.inputs]
    ours_out = case.ours(ours_in)
    theirs_out = case.theirs([to_torch(x) for x in ours_in], to_torch(ours_out))
    same = {torch.float32: axiom.float32, torch.float64: axiom.float64, torch.int64: axiom.int64, torch.uint8: axiom.uint8}
    assert ours_out.dtype == same[theirs_out.dtype], f"{case_id(case)}: dtype {ours_out.dtype}, PyTorch's {theirs_out.dtype}"
    assert_close(ours_out, theirs_out, 2e-5, f"{case_id(case)}: float32 forward")


# --- the op table ------------------------------------------------------------------------------------

TABLE = [from_the_op_table(case) for case in OP_TABLE]


def test_the_op_table_reaches_python_whole_with_a_pytorch_spelling_for_every_case():
    assert len(OP_TABLE) > 150
    assert len({c.op for c in OP_TABLE}) > 50
    assert [case_id(c) for c in OP_TABLE if not c.pytorch.strip()] == []


@pytest.mark.parametrize("case", TABLE, ids=case_id)
def test_float64_values_gradients_and_second_derivatives(case):
    check_float64(case)


@pytest.mark.parametrize("case", TABLE, ids=case_id)
def test_float32_values(case):
    check_float32(case)


# --- the Python spellings of a few ops ----------------------------------------------------------------

def rand(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def strided(array):
    """The same values in a buffer twice as wide along the last axis, viewed with a step of 2."""
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def transposed(array):
    """The same values, held as the transpose of a contiguous buffer."""
    return np.ascontiguousarray(array.T).T


def spelled(what, arrays, ours, theirs):
    """A case on NumPy arrays, shared with axiom without a copy; float ones are differentiated."""
    inputs = [axiom.from_numpy(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    return Case("python", what, inputs, lambda x: ours(*x), lambda x, _: theirs(*x))


def python_spellings():
    a, b = rand(3, 4), rand(2, 3, 1)
    targets = rng.integers(0, 5, size=(2, 3)).astype(np.int64)
    return [
        spelled("a number on the left of each operator", [a, b], lambda x, y: 2.0 * x - 1.5 / (y + 3.0) + (1.0 - x * y),
                lambda x, y: 2.0 * x - 1.5 / (y + 3.0) + (1.0 - x * y)),
        spelled("operators between a strided and a transposed array", [strided(rand(3, 4)), transposed(rand(3, 4))],
                lambda x, y: x * y + x / (y + 3.0), lambda x, y: x * y + x / (y + 3.0)),
        spelled("indexing with None, ... and a step", [rand(2, 3, 4)], lambda v: v[1:, None, ..., ::3] * v[0, 0, 1],
                lambda v: v[1:, None, ..., ::3] * v[0, 0, 1]),
        spelled("var over every axis (None), keepdim, correction 0", [rand(2, 3, 4)], lambda v: axiom.var(v, None, True, 0),
                lambda v: torch.var(v, unbiased=False).reshape(1, 1, 1)),
        spelled("sum and mean of a list of axes, keepdim", [rand(2, 3, 4)],
                lambda v: axiom.sum(v, [0, 2], True) + axiom.mean(v, [0, 2], True),
                lambda v: v.sum((0, 2), keepdim=True) + v.mean((0, 2), keepdim=True)),
        spelled("layer_norm with eps as a keyword", [rand(2, 5)], lambda v: axiom.layer_norm(v, eps=0.1),
                lambda v: F.layer_norm(v, (5,), eps=0.1)),
        spelled("cross_entropy with reduction as a keyword", [rand(2, 3, 5), targets],
                lambda v, y: axiom.cross_entropy(v, y, reduction="none"), lambda v, y: cross_entropy(v, y, reduction="none")),
        spelled("activation_linear with axiom.Activation", [rand(2, 3, 4), rand(4, 5), rand(5)],
                lambda h, w, c: axiom.activation_linear(axiom.Activation.gelu, h, w, c), lambda h, w, c: F.gelu(h) @ w + c),
        spelled("layer_norm_feedforward, the norm's parameters None", [rand(2, 3, 4), rand(4, 6), rand(6), rand(6, 5)],
                lambda x, w, c, v: axiom.layer_norm_feedforward(x, None, None, 1e-5, w, c, axiom.Activation.gelu_tanh, v),
                lambda x, w, c, v: F.gelu(F.layer_norm(x, (4,)) @ w + c, approximate="tanh") @ v),
        spelled("attention with AttentionMask.causal()", [rand(2, 3, 4, 12)],
                lambda x: axiom.attention(x, 1, 2, axiom.AttentionMask.causal()), lambda x: attention(x, 1, 2, True)),
        spelled("dropout not training: the identity", [a], lambda x: axiom.dropout(x, 0.4, False), lambda x: x),
        spelled("to(axiom.float32) and back", [a], lambda v: v.to(axiom.float32).to(axiom.float64) * v,
                lambda v: v.to(torch.float32).to(torch.float64) * v),
    ]


SPELLINGS = python_spellings()


@pytest.mark.parametrize("case", SPELLINGS, ids=lambda c: c.what)
def test_python_spellings_against_pytorch(case):
    check_float64(case)


def test_categorical_draws_what_searchsorted_finds_in_pytorchs_cumulative_softmax():
    """axiom.categorical against the inverse-CDF draw in PyTorch (apps/bench/torch_reference.py's pick)."""
    logits, u = rand(200, 7, low=-3.0, high=3.0), rng.random(200)
    ours = axiom.categorical(axiom.from_numpy(logits), axiom.from_numpy(u), 0.5).numpy()
    cdf = torch.cumsum(torch.softmax(torch.from_numpy(logits) / 0.5, dim=-1), dim=-1)
    theirs = torch.searchsorted(cdf, torch.from_numpy(u)[:, None] * cdf[:, -1:], right=True).squeeze(-1)
    assert ours.dtype == np.int64 and ours.shape == (200,)
    assert (ours == theirs.numpy()).all()
    assert len(set(ours.tolist())) == 7  # every value drawn: the check can fail
