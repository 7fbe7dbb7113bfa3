"""axiom.nn: layers. The C++ layers (Dense, LayerNorm, Embedding, Dropout, AxialAttention,
TransformerBlock, GRU, ...) are callable objects with parameters(), state_dict(), save() and load().
Layers written in Python derive from Module below, as in PyTorch:

    class MLP(axiom.nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = axiom.nn.Dense(4, 16)
            self.out = axiom.nn.Dense(16, 1)

        def forward(self, x):
            return self.out(axiom.relu(self.hidden(x)))
"""
from collections import OrderedDict

from . import _axiom
from ._axiom.nn import *  # noqa: F401,F403


class Module:
    """A layer written in Python. Its parameters are the attributes that are tensors requiring a
    gradient, and those of its attributes that are layers (Python or C++), found in the order the
    attributes were set; state_dict() names them by their dotted paths, as C++ modules do."""

    def __init__(self):
        self.training = True

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def _children(self):
        for name, value in vars(self).items():
            if isinstance(value, (Module, CppModule)):  # noqa: F405
                yield name, value

    def named_parameters(self):
        found = []
        for name, value in vars(self).items():
            if isinstance(value, _axiom.Tensor) and value.requires_grad:
                found.append((name, value))
            elif isinstance(value, (Module, CppModule)):  # noqa: F405
                found += [(f"{name}.{inner}", p) for inner, p in value.named_parameters()]
        return found

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def parameter_count(self):
        return sum(p.numel() for p in self.parameters())

    def state_dict(self):
        return OrderedDict(self.named_parameters())

    def load_state_dict(self, state):
        """Copies the values in; every name must be there, with its shape."""
        mine = dict(self.named_parameters())
        missing, unexpected = sorted(set(mine) - set(state)), sorted(set(state) - set(mine))
        if missing or unexpected:
            raise KeyError(f"[load_state_dict] missing {missing}, unexpected {unexpected}")
        with _axiom._NoGrad():
            for name, target in mine.items():
                value = state[name] if isinstance(state[name], _axiom.Tensor) else _axiom.tensor(state[name])
                if value.shape != target.shape:
                    raise _axiom.ShapeError(f"[load_state_dict] {name} is {list(target.shape)}, the state's is {list(value.shape)}")
                _axiom.copy_into(value, target.detach())

    def train(self, mode=True):
        self.training = mode
        for _, child in self._children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()
