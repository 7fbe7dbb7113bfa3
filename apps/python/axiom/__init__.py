"""axiom from Python: tensors, reverse-mode autograd with derivatives of any order, layers up to the
Axial Transformer, optimizers, datasets and the trainer. The numbers are computed by axiom's C++
library (axiom._axiom); this file adds what is more natural written in Python (grad mode as a
context manager and a decorator).

    import axiom
    x = axiom.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad            # tensor([2, 4, 6], ...)
"""
import functools as _functools
import threading as _threading

from . import _axiom
from ._axiom import *  # noqa: F401,F403  Tensor, the ops, the factories, grad, gradcheck, ...
from ._axiom import _CustomOp, _EnableGrad, _NoGrad, _Profiler

# The star import brought the compiled submodules; the package's own files (nn.py, ...) wrap them.
del nn, optim, models, data  # noqa: F821
from . import nn, optim, models, data, safetensors  # noqa: E402,F401

float32, float64, int64, uint8 = dtype.float32, dtype.float64, dtype.int64, dtype.uint8  # noqa: F405


class _GradMode:
    """A context manager that is also a decorator, as torch.no_grad is."""

    _guard = None

    def __init__(self):
        self._active = []  # a stack: the same object may be entered again inside itself

    def __enter__(self):
        guard = self._guard()
        guard.__enter__()
        self._active.append(guard)
        return self

    def __exit__(self, *exc):
        self._active.pop().__exit__(*exc)
        return False

    def __call__(self, function):
        @_functools.wraps(function)
        def wrapped(*args, **kwargs):
            with type(self)():
                return function(*args, **kwargs)
        return wrapped


class no_grad(_GradMode):
    """Inside `with axiom.no_grad():` (or a function decorated with it) ops record nothing."""

    _guard = _NoGrad


class enable_grad(_GradMode):
    """Inside `with axiom.enable_grad():` ops record again, even within no_grad."""

    _guard = _EnableGrad


def _tensor_from_state(values, device, requires_grad):
    """Unpickles a Tensor: a copy of the values on the device, a leaf."""
    return tensor(values, device=device, requires_grad=requires_grad)  # noqa: F405


def _reduce_tensor(x):
    """Pickling (pickle, copy.deepcopy, multiprocessing): a tensor travels as its values (a NumPy
    copy), its device and, for a leaf, whether it requires a gradient. Its graph does not travel,
    as in PyTorch."""
    import numpy
    values = numpy.array(x.detach().to("cpu"))
    return _tensor_from_state, (values, str(x.device), x.is_leaf and x.requires_grad)


Tensor.__reduce__ = _reduce_tensor  # noqa: F405


def rand(*shape, generator=None, dtype=float32, device="cpu"):
    """Uniform in [0, 1): rand(2, 3) or rand((2, 3))."""
    return uniform(_shape(shape), 0.0, 1.0, generator=generator, dtype=dtype, device=device)  # noqa: F405


def randn(*shape, generator=None, dtype=float32, device="cpu"):
    """Normal with mean 0 and standard deviation 1: randn(2, 3) or randn((2, 3))."""
    return normal(_shape(shape), 0.0, 1.0, generator=generator, dtype=dtype, device=device)  # noqa: F405


def _shape(sizes):
    return sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes


class custom_op:
    """Your own op: a forward, and the backward you write for it, recorded under your name.

        @axiom.custom_op("softplus")
        def softplus(x):                     # any code of tensors; recording is off inside
            return axiom.log(axiom.exp(x) + 1.0)

        @softplus.backward
        def softplus_backward(ctx):          # ctx.inputs, ctx.output, ctx.grad_output, ctx.needs
            return ctx.grad_output * axiom.sigmoid(ctx.inputs[0])  # one gradient per input (None: none)

        y = softplus(x)                      # y.grad_fn.name() is 'softplus'

    This is the form of MLX's mx.custom_function and JAX's custom_vjp, not PyTorch's Function class:
    it is C++'s axiom::CustomOp one for one (autograd/custom_op.h), the backward is given the inputs
    and the output (nothing to save by hand), and the op is a function, called as one. A backward
    written in axiom's ops is differentiable again (gradgradcheck, create_graph=True); pass
    once_differentiable=True for one that is not. Such an op can also be given a forward-mode rule,
    for axiom.jvp through it (JAX's custom_jvp), by a third decorator:

        @softplus.jvp
        def softplus_jvp(inputs, tangents):  # J u: lists of tensors in, a tensor like the output out
            return tangents[0] * axiom.sigmoid(inputs[0])

    An exception raised in the forward, the backward or the jvp arrives as it was raised, with a
    note naming the op. A name is one op for the life of the process: defining a second op under it
    is an error. The op is made on its first call; decorate everything before that.
    """

    def __init__(self, name, once_differentiable=False):
        self.name = name
        self.once_differentiable = once_differentiable
        self._forward = None
        self._backward = None
        self._jvp = None
        self._op = None
        self._making = _threading.Lock()

    def __call__(self, *args):
        if self._forward is None:  # @custom_op("name") on the forward
            (forward,) = args
            self._forward = forward
            _functools.update_wrapper(self, forward)
            return self
        if self._backward is None:
            raise RuntimeError(f"custom op '{self.name}' has no backward: define one with @{self.__name__}.backward")
        with self._making:  # two threads' first calls make one op
            if self._op is None:
                jvp = self._noted(self._jvp, "jvp") if self._jvp else None
                self._op = _CustomOp(self.name, self._noted(self._forward, "forward"),
                                     self._noted(self._backward, "backward"), self.once_differentiable, jvp)
        return self._op(*args)

    def backward(self, backward):
        """Decorates the op's backward, backward(ctx) -> one gradient per input."""
        self._check_decorating("backward")
        self._backward = backward
        return backward

    def jvp(self, jvp):
        """Decorates a once_differentiable op's forward-mode rule, jvp(inputs, tangents) -> J u."""
        self._check_decorating("jvp")
        self._jvp = jvp
        return jvp

    def _check_decorating(self, part):
        if self._forward is None:
            raise RuntimeError(f"custom op '{self.name}': decorate the forward before the {part}")
        if self._op is not None:
            raise RuntimeError(f"custom op '{self.name}' has been called already: decorate its {part} before")

    def _noted(self, function, part):  # function, whose exceptions carry a note naming the op
        name = self.name

        @_functools.wraps(function)
        def call(*args):
            try:
                return function(*args)
            except Exception as error:
                error.add_note(f"(in the {part} of custom op '{name}')")
                raise
        return call

    def __repr__(self):
        return f"<axiom.custom_op '{self.name}'>"


class profile:
    """Where the time goes, op by op (C++'s axiom::Profiler, autograd/profiler.h):

        with axiom.profile() as prof:
            loss = model(x).sum()
            loss.backward()
        print(prof.table())                          # per op and pass (forward, backward), slowest first
        open("trace.json", "w").write(prof.chrome_trace())   # chrome://tracing, ui.perfetto.dev

    A forward op's time runs from the end of the event before it on its thread to its recording, so
    Python's own work between two ops counts toward the second; axiom.profile_range("name") marks
    a part of your own. One profiler at a time."""

    def __init__(self):
        self._profiler = None
        self._result = None

    def __enter__(self):
        self._profiler = _Profiler()
        return self

    def __exit__(self, *exc):
        self._result = self._profiler.stop()
        return False

    def _profile(self):
        if self._result is None:
            raise RuntimeError("the profile is ready when its `with` block has ended")
        return self._result

    def table(self, max_rows=25):
        return self._profile().table(max_rows)

    def csv(self):
        return self._profile().csv()

    def chrome_trace(self):
        return self._profile().chrome_trace()

    def rows(self):
        return self._profile().rows()

    @property
    def wall_seconds(self):
        return self._profile().wall_seconds


def draw(outputs, names=None, collapse=0):
    """The graph that made `outputs`, drawn by Graphviz (Debian's python3-graphviz): a notebook
    shows the returned graphviz.Source as a picture; .render("graph", format="svg") writes a file.
    See axiom.to_dot for what it shows."""
    try:
        import graphviz
    except ImportError as missing:
        raise ImportError("axiom.draw needs Graphviz's Python module: apt-get install python3-graphviz "
                          "(or use axiom.to_dot, and dot -Tsvg)") from missing
    return graphviz.Source(to_dot(outputs, names, collapse))  # noqa: F405
