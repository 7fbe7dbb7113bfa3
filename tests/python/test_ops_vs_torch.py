"""Every differentiable op of axiom's op table, in axiom and in PyTorch, on the same inputs.

For each case: forward values, gradients (a random upstream gradient v) and second derivatives (the
gradient of <grad, u> for a random u) in float64, and forward values in float32 with float32
tolerances. Inputs include broadcast shapes, strided NumPy arrays shared without a copy (transposed
and sliced), empty tensors and integer constants. PyTorch is Debian's python3-torch; each PyTorch
side is written from the op's definition in autograd/ops.h, not from axiom's code.

The last test reads autograd/ops.h and the view section of autograd/tensor.h, as the C++ op table's
coverage test does, and fails when an op there has no case here.
"""
import math
import os
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import axiom
import torch_reference

SOURCE_DIR = os.environ.get("AXIOM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
rng = np.random.default_rng(7)


def rand(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def positive(*shape):
    return rand(*shape, low=0.5, high=2.0)


def away_from_zero(*shape):
    """Values whose magnitude is at least 0.2: abs and relu have no derivative at 0."""
    values = rand(*shape)
    return np.where(np.abs(values) < 0.2, np.sign(values + 1e-12) * 0.2, values) + 0.05 * np.sign(values)


def strided(array):
    """The same values in a buffer twice as wide along the last axis, viewed with a step of 2."""
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def transposed(array):
    """The same values, held as the transpose of a contiguous buffer."""
    return np.ascontiguousarray(array.T).T


@dataclass
class Case:
    op: str                     # the op of autograd/ops.h or the Tensor method it checks
    what: str                   # what is particular about the inputs
    inputs: list                # NumPy arrays; float ones are differentiated unless listed in `constant`
    ours: Callable              # f(*axiom tensors)
    theirs: Callable            # f(*torch tensors)
    constant: tuple = ()        # indices of float inputs that are not differentiated
    tolerance: float = 1e-9     # relative, float64
    second: bool = True         # compare second derivatives
    float32: bool = True        # also compare the float32 forward

    def differentiated(self, i):
        return self.inputs[i].dtype.kind == "f" and i not in self.constant


@dataclass
class Table:
    cases: list = field(default_factory=list)

    def add(self, op, what, inputs, ours, theirs, **options):
        self.cases.append(Case(op, what, inputs, ours, theirs, **options))


def torch_queries(qkv, axis, heads):
    """The queries split into heads, the line's axis next to the features: [..., H, L, Dh]."""
    x = qkv.movedim(axis, -2)
    d = x.shape[-1] // 3
    return x[..., :d].unflatten(-1, (heads, d // heads)).transpose(-2, -3)


def torch_pad(x, axis, before, after, value):
    axis = axis % x.dim()
    widths = [0, 0] * (x.dim() - 1 - axis) + [before, after]
    return F.pad(x, widths, value=value)


def torch_cross_entropy(logits, targets, smoothing=0.0, reduction="mean"):
    flat = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), label_smoothing=smoothing, reduction=reduction)
    return flat.reshape(targets.shape) if reduction == "none" else flat


def elementwise(t):
    a, b, c = rand(3, 4), rand(2, 3, 1), positive(3, 4)
    for name, ours, theirs in [("add", axiom.add, torch.add), ("sub", axiom.sub, torch.sub), ("mul", axiom.mul, torch.mul)]:
        t.add(name, "same shape", [a, rand(3, 4)], ours, theirs)
        t.add(name, "broadcast [3, 4] with [2, 3, 1]", [a, b], ours, theirs)
        t.add(name, "a strided and a transposed leaf", [strided(rand(3, 4)), transposed(rand(3, 4))], ours, theirs)
        t.add(name, "a number", [a], lambda x, f=ours: f(x, 2.5), lambda x, f=theirs: f(x, 2.5))
    t.add("div", "broadcast, positive divisor", [a, positive(2, 3, 1)], axiom.div, torch.div)
    t.add("div", "a number", [a], lambda x: axiom.div(x, 4.0), lambda x: x / 4.0)
    t.add("pow", "positive base, tensor exponent", [c, rand(3, 4)], axiom.pow, torch.pow)
    t.add("pow", "a number", [c], lambda x: axiom.pow(x, 2.5), lambda x: x ** 2.5)
    t.add("maximum", "no ties", [a, rand(3, 4) + 3.0], axiom.maximum, torch.maximum)
    t.add("maximum", "broadcast", [rand(3, 4), rand(4) * 0.5], axiom.maximum, torch.maximum)
    t.add("minimum", "broadcast", [rand(3, 4), rand(4) * 0.5], axiom.minimum, torch.minimum)
    t.add("operator+", "tensors", [a, b], lambda x, y: x + y, lambda x, y: x + y)
    t.add("operator-", "binary and unary", [a, b], lambda x, y: -(x - y), lambda x, y: -(x - y))
    t.add("operator*", "and a number on the left", [a, b], lambda x, y: 2.0 * x * y, lambda x, y: 2.0 * x * y)
    t.add("operator/", "and a number on the left", [a, positive(3, 4)], lambda x, y: x / y + 1.0 / y, lambda x, y: x / y + 1.0 / y)
    t.add("neg", "strided", [strided(rand(2, 3))], axiom.neg, torch.neg)
    t.add("abs", "away from 0", [away_from_zero(3, 4)], axiom.abs, torch.abs)
    t.add("exp", "", [a], axiom.exp, torch.exp)
    t.add("log", "positive", [c], axiom.log, torch.log)
    t.add("sqrt", "positive", [c], axiom.sqrt, torch.sqrt)
    t.add("rsqrt", "positive", [c], axiom.rsqrt, torch.rsqrt)
    t.add("tanh", "", [rand(3, 4)], axiom.tanh, torch.tanh)
    t.add("sigmoid", "", [rand(3, 4) * 3], axiom.sigmoid, torch.sigmoid)
    t.add("relu", "away from 0", [away_from_zero(3, 4)], axiom.relu, torch.relu)
    t.add("gelu", "", [rand(3, 4) * 2], axiom.gelu, F.gelu)
    t.add("gelu_tanh", "", [rand(3, 4) * 2], axiom.gelu_tanh, lambda x: F.gelu(x, approximate="tanh"))
    t.add("exp", "empty [0, 3]", [rand(0, 3)], axiom.exp, torch.exp)
    cond = (rng.uniform(size=(3, 4)) > 0.5).astype(np.uint8)
    t.add("where", "uint8 condition, broadcast b", [cond, a, rand(4)], axiom.where, lambda k, x, y: torch.where(k.bool(), x, y))
    t.add("masked_fill", "broadcast mask [4]", [a, cond[0]], lambda x, m: axiom.masked_fill(x, m, -2.0),
          lambda x, m: x.masked_fill(m.bool(), -2.0))

    def dropout_pair():
        kept = {}

        def ours(x):
            y = axiom.dropout(x, 0.4, True, axiom.Generator(3))
            kept["mask"] = torch.from_numpy(np.asarray(axiom.gt(axiom.abs(y.detach()), 0.0)).astype(np.float64))
            return y

        def theirs(x):
            return x * kept["mask"] / 0.6
        return ours, theirs

    ours, theirs = dropout_pair()
    t.add("dropout", "p 0.4, the mask axiom drew", [positive(4, 5)], ours, theirs, float32=False)
    t.add("dropout", "not training: the identity", [a], lambda x: axiom.dropout(x, 0.4, False), lambda x: x)


def reductions(t):
    x = rand(2, 3, 4)
    for name, ours, theirs in [("sum", axiom.sum, torch.sum), ("mean", axiom.mean, torch.mean)]:
        t.add(name, "every axis", [x], ours, theirs)
        t.add(name, "axes [0, 2], keepdim", [x], lambda v, f=ours: f(v, [0, 2], True), lambda v, f=theirs: f(v, (0, 2), keepdim=True))
        t.add(name, "axis -1 of a strided leaf", [strided(rand(3, 4))], lambda v, f=ours: f(v, -1), lambda v, f=theirs: f(v, -1))
    t.add("sum", "empty [0, 3] over axis 0", [rand(0, 3)], lambda v: axiom.sum(v, 0), lambda v: v.sum(0))
    t.add("var", "axis 1, correction 1", [x], lambda v: axiom.var(v, 1), lambda v: torch.var(v, 1, unbiased=True))
    t.add("var", "every axis, correction 0, keepdim", [x], lambda v: axiom.var(v, None, True, 0), lambda v: torch.var(v, unbiased=False).reshape(1, 1, 1))
    t.add("max", "axis 1 (no ties)", [x], lambda v: axiom.max(v, 1), lambda v: torch.amax(v, 1))
    t.add("max", "every axis", [x], axiom.max, torch.amax)
    t.add("min", "axes [0, 1], keepdim", [x], lambda v: axiom.min(v, [0, 1], True), lambda v: torch.amin(v, (0, 1), keepdim=True))


def products(t):
    gelu = axiom.Activation.gelu
    t.add("matmul", "[2, 3] @ [3, 4]", [rand(2, 3), rand(3, 4)], axiom.matmul, torch.matmul)
    t.add("matmul", "batched, broadcast [2, 1, 3, 4] @ [5, 4, 2]", [rand(2, 1, 3, 4), rand(5, 4, 2)], axiom.matmul, torch.matmul)
    t.add("matmul", "transposed and strided leaves", [transposed(rand(3, 4)), strided(rand(4, 2))], axiom.matmul, torch.matmul)
    t.add("matmul", "vector @ matrix", [rand(3), rand(3, 2)], axiom.matmul, torch.matmul)
    t.add("matmul", "empty K", [rand(2, 0), rand(0, 3)], axiom.matmul, torch.matmul)
    t.add("linear", "with bias", [rand(2, 5, 3), rand(3, 4), rand(4)], axiom.linear, lambda x, w, b: x @ w + b)
    t.add("linear", "no bias", [rand(5, 3), rand(3, 4)], axiom.linear, lambda x, w: x @ w)
    t.add("activation_linear", "gelu, with bias", [rand(2, 3, 4), rand(4, 5), rand(5)],
          lambda h, w, b: axiom.activation_linear(gelu, h, w, b), lambda h, w, b: F.gelu(h) @ w + b)
    t.add("activation_linear", "relu, no bias", [away_from_zero(3, 4), rand(4, 2)],
          lambda h, w: axiom.activation_linear(axiom.Activation.relu, h, w), lambda h, w: torch.relu(h) @ w)


def shapes(t):
    a, b = rand(2, 3), rand(2, 4)
    t.add("concat", "axis 1, sizes 3 and 4", [a, b], lambda x, y: axiom.concat([x, y], 1), lambda x, y: torch.cat([x, y], 1))
    t.add("concat", "an empty piece", [a, rand(0, 3)], lambda x, y: axiom.concat([x, y], 0), lambda x, y: torch.cat([x, y], 0))
    t.add("stack", "axis -1", [a, rand(2, 3)], lambda x, y: axiom.stack([x, y], -1), lambda x, y: torch.stack([x, y], -1))
    t.add("pad", "axis 0, 1 before 2 after, value 0.5", [a], lambda x: axiom.pad(x, 0, 1, 2, 0.5), lambda x: torch_pad(x, 0, 1, 2, 0.5))
    t.add("pad", "last axis", [a], lambda x: axiom.pad(x, -1, 0, 3), lambda x: torch_pad(x, -1, 0, 3, 0.0))
    t.add("shift", "forward by 1", [rand(2, 4, 3)], lambda x: axiom.shift(x, 1, 1), lambda x: torch_reference.shift(x, 1, 1))
    t.add("shift", "backward by 2", [rand(2, 4, 3)], lambda x: axiom.shift(x, -2, -2), lambda x: torch_reference.shift(x, -2, -2))
    index = rng.integers(0, 3, size=(2, 4)).astype(np.int64)
    t.add("gather", "axis 1, repeats", [rand(2, 3), index], lambda x, i: axiom.gather(x, 1, i), lambda x, i: torch.gather(x, 1, i))
    picks = np.array([2, 0, 2], dtype=np.int64)
    t.add("index_select", "repeats", [rand(4, 3), picks], lambda x, i: axiom.index_select(x, 0, i), lambda x, i: torch.index_select(x, 0, i))
    ids = np.array([[1, 3], [3, 0]], dtype=np.int64)
    t.add("embedding", "repeated ids", [rand(5, 3), ids], axiom.embedding, lambda w, i: F.embedding(i, w))


def normalizing(t):
    x = rand(2, 3, 5) * 2
    t.add("softmax", "last axis", [x], axiom.softmax, lambda v: torch.softmax(v, -1))
    t.add("softmax", "axis 1 of a transposed leaf", [transposed(rand(4, 3))], lambda v: axiom.softmax(v, 0), lambda v: torch.softmax(v, 0))
    t.add("log_softmax", "axis 1", [x], lambda v: axiom.log_softmax(v, 1), lambda v: torch.log_softmax(v, 1))
    t.add("layer_norm", "weight and bias", [x, rand(5), rand(5)], axiom.layer_norm, lambda v, w, b: F.layer_norm(v, (5,), w, b))
    t.add("layer_norm", "no weight, eps 0.1", [x], lambda v: axiom.layer_norm(v, eps=0.1), lambda v: F.layer_norm(v, (5,), eps=0.1))
    t.add("layer_norm_linear", "with every parameter", [x, rand(5), rand(5), rand(5, 4), rand(4)],
          lambda v, nw, nb, w, b: axiom.layer_norm_linear(v, nw, nb, 1e-5, w, b),
          lambda v, nw, nb, w, b: F.layer_norm(v, (5,), nw, nb) @ w + b)
    targets = rng.integers(0, 5, size=(2, 3)).astype(np.int64)
    t.add("cross_entropy", "mean", [x, targets], axiom.cross_entropy, torch_cross_entropy)
    t.add("cross_entropy", "sum, label smoothing 0.1", [x, targets], lambda v, y: axiom.cross_entropy(v, y, 0.1, "sum"),
          lambda v, y: torch_cross_entropy(v, y, 0.1, "sum"))
    t.add("cross_entropy", "none", [x, targets], lambda v, y: axiom.cross_entropy(v, y, reduction="none"),
          lambda v, y: torch_cross_entropy(v, y, reduction="none"))


def attention(t):
    causal = axiom.AttentionMask.causal()
    qkv = rand(2, 3, 4, 12)  # [B, 3, 4, 3D], D 4, 2 heads
    t.add("attention", "axis 2, unmasked", [qkv], lambda x: axiom.attention(x, 2, 2), lambda x: torch_reference.attention(x, 2, 2))
    t.add("attention", "axis 1, causal", [qkv], lambda x: axiom.attention(x, 1, 2, causal), lambda x: torch_reference.attention(x, 1, 2, True))
    t.add("attention", "one head, a strided leaf", [strided(rand(2, 5, 6))], lambda x: axiom.attention(x, 1, 1, causal),
          lambda x: torch_reference.attention(x, 1, 1, True))
    bias = rand(2, 4, 2, 3, 3)  # [B, other axis, H, L, L] for axis 1
    t.add("attention", "a bias, axis 1", [qkv, bias], lambda x, b: axiom.attention(x, 1, 2, bias=b),
          lambda x, b: torch_reference.attention(x, 1, 2, bias=b))
    t.add("attention_queries", "axis 1", [qkv], lambda x: axiom.attention_queries(x, 1, 2), lambda x: torch_queries(x, 1, 2))


def views(t):
    x = rand(2, 3, 4)
    t.add("reshape", "to [6, 4]", [x], lambda v: v.reshape(6, 4), lambda v: v.reshape(6, 4))
    t.add("reshape", "a transposed leaf (a copy)", [transposed(rand(3, 4))], lambda v: v.reshape(-1), lambda v: v.reshape(-1))
    t.add("permute", "[2, 0, 1]", [x], lambda v: v.permute(2, 0, 1), lambda v: v.permute(2, 0, 1))
    t.add("transpose", "0 and 2", [x], lambda v: v.transpose(0, 2), lambda v: v.transpose(0, 2))
    t.add("movedim", "0 to -1", [x], lambda v: v.movedim(0, -1), lambda v: v.movedim(0, -1))
    t.add("slice", "axis 2, step 2", [x], lambda v: v.slice(2, 1, 4, 2), lambda v: v[:, :, 1:4:2])
    t.add("slice", "by indexing, with None and ...", [x], lambda v: v[1:, None, ..., ::3], lambda v: v[1:, None, ..., ::3])
    t.add("narrow", "axis 1", [x], lambda v: v.narrow(1, 1, 2), lambda v: v.narrow(1, 1, 2))
    t.add("select", "axis 1, index -1", [x], lambda v: v.select(1, -1) * v[0, 0], lambda v: v.select(1, -1) * v[0, 0])
    t.add("expand", "[3, 1] to [2, 3, 4]", [rand(3, 1)], lambda v: v.expand(2, 3, 4) * 1.5, lambda v: v.expand(2, 3, 4) * 1.5)
    t.add("squeeze", "axis 1", [rand(3, 1, 2)], lambda v: v.squeeze(1), lambda v: v.squeeze(1))
    t.add("unsqueeze", "axis -1", [x], lambda v: v.unsqueeze(-1), lambda v: v.unsqueeze(-1))
    t.add("flatten", "", [x], lambda v: v.flatten(), lambda v: v.flatten())
    t.add("contiguous", "of a transposed leaf", [transposed(rand(3, 4))], lambda v: v.contiguous() * 2.0, lambda v: v.contiguous() * 2.0)
    t.add("to", "float32 and back", [x], lambda v: v.to(axiom.float32).to(axiom.float64) * v,
          lambda v: v.to(torch.float32).to(torch.float64) * v, tolerance=1e-6, float32=False)


def op_table():
    table = Table()
    for section in (elementwise, reductions, products, shapes, normalizing, attention, views):
        section(table)
    return table.cases


CASES = op_table()


def case_id(case):
    return f"{case.op}: {case.what}" if case.what else case.op


# --- running one case on both sides ------------------------------------------------------------------

def ours_inputs(case, dtype):
    tensors = []
    for i, array in enumerate(case.inputs):
        value = array.astype(dtype) if array.dtype.kind == "f" and dtype != np.float64 else array
        tensors.append(axiom.from_numpy(value, requires_grad=case.differentiated(i)))
    return tensors


def theirs_inputs(case, dtype):
    tensors = []
    for i, array in enumerate(case.inputs):
        value = torch.from_numpy(np.array(array, dtype=dtype if array.dtype.kind == "f" else array.dtype))
        tensors.append(value.requires_grad_(case.differentiated(i)))
    return tensors


def as_numpy(value):
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        # clone(): PyTorch returns some zero derivatives as "zero tensors" that hold no memory,
        # which .numpy() would read from address 0
        return value.detach().clone().numpy()
    return np.asarray(value.detach())


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


def derivatives(grad, requires_grad, outputs, inputs, v, u):
    """First derivatives of <outputs, v> with a graph, and the gradient of <first, u>."""
    wanted = [x for x in inputs if x.requires_grad]
    first = grad(outputs, wanted, v, create_graph=True, allow_unused=True)
    terms = [(g * w).sum() for g, w in zip(first, u) if g is not None and requires_grad(g)]
    if not terms:
        return first, [None] * len(wanted)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return first, grad(total, wanted, allow_unused=True)


def ours_derivatives(outputs, inputs, v, u):
    grad = lambda o, i, g=None, **k: axiom.grad(o, list(i), g, **k)  # noqa: E731
    return derivatives(grad, lambda g: g.requires_grad, outputs, inputs, v, u)


def theirs_derivatives(outputs, inputs, v, u):
    grad = lambda o, i, g=None, **k: torch.autograd.grad(o, list(i), g, **k)  # noqa: E731
    return derivatives(grad, lambda g: g.requires_grad, outputs, inputs, v, u)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_float64_values_gradients_and_second_derivatives(case):
    ours_in, theirs_in = ours_inputs(case, np.float64), theirs_inputs(case, np.float64)
    ours_out, theirs_out = case.ours(*ours_in), case.theirs(*theirs_in)
    assert_close(ours_out, theirs_out, case.tolerance, f"{case_id(case)}: forward")
    if not any(x.requires_grad for x in ours_in):
        return
    v = rng.uniform(-1, 1, size=tuple(ours_out.shape))
    wanted = [x for x in ours_in if x.requires_grad]
    u = [rng.uniform(-1, 1, size=tuple(x.shape)) for x in wanted]
    ours_first, ours_second = ours_derivatives(ours_out, ours_in, axiom.from_numpy(v), [axiom.from_numpy(w) for w in u])
    theirs_first, theirs_second = theirs_derivatives(theirs_out, theirs_in, torch.from_numpy(v), [torch.from_numpy(w) for w in u])
    for k, (a, b) in enumerate(zip(ours_first, theirs_first)):
        assert_close(a, b, case.tolerance, f"{case_id(case)}: gradient of input {k}")
    if case.second:
        for k, (a, b) in enumerate(zip(ours_second, theirs_second)):
            assert_close(a, b, 10 * case.tolerance, f"{case_id(case)}: second derivative of input {k}")


@pytest.mark.parametrize("case", [c for c in CASES if c.float32], ids=case_id)
def test_float32_values(case):
    ours_out = case.ours(*ours_inputs(case, np.float32))
    theirs_out = case.theirs(*theirs_inputs(case, np.float32))
    same = {torch.float32: axiom.float32, torch.float64: axiom.float64, torch.int64: axiom.int64, torch.uint8: axiom.uint8}
    assert ours_out.dtype == same[theirs_out.dtype]
    assert_close(ours_out, theirs_out, 2e-5, f"{case_id(case)}: float32 forward")


# --- coverage ---------------------------------------------------------------------------------------------

def ops_that_need_a_case():
    """The op table's list (tests/autograd/op_table.cpp): Tensor-returning functions of ops.h and
    the view methods of tensor.h, less the ones that are not differentiable."""
    exempt = {"eq", "lt", "gt", "argmax", "attention_step", "activate"}
    with open(os.path.join(SOURCE_DIR, "autograd", "ops.h")) as f:
        names = set(re.findall(r"\nTensor (operator[^\s(]+|[a-z_]+)\(", f.read()))
    with open(os.path.join(SOURCE_DIR, "autograd", "tensor.h")) as f:
        text = f.read()
    views_section = text[text.index("differentiable views"):text.index("For the engine")]
    names |= set(re.findall(r"Tensor ([a-z_]+)\(", views_section))
    return sorted(names - exempt)


def test_every_op_of_the_op_table_has_a_case():
    needed = ops_that_need_a_case()
    assert len(needed) > 50
    covered = {c.op for c in CASES}
    assert [op for op in needed if op not in covered] == []
    assert [op for op in covered if op not in needed] == []
