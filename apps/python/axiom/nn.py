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
        """(dotted name, tensor) pairs; a tensor reached twice (a layer kept under two names) once."""
        found, seen = [], set()
        for name, value in vars(self).items():
            if isinstance(value, (list, tuple, dict)) and any(isinstance(v, (Module, CppModule)) for v in  # noqa: F405
                                                              (value.values() if isinstance(value, dict) else value)):
                raise TypeError(f"[Module] {type(self).__name__}.{name} holds layers in a {type(value).__name__}: "
                                "use axiom.nn.ModuleList, whose layers' parameters are found")
            if isinstance(value, _axiom.Tensor) and value.requires_grad:
                candidates = [(name, value)]
            elif isinstance(value, (Module, CppModule)):  # noqa: F405
                candidates = [(f"{name}.{inner}", p) for inner, p in value.named_parameters()]
            else:
                continue
            for qualified, p in candidates:
                if hash(p) not in seen:  # a Tensor's hash is its identity (the C++ tensor it holds)
                    seen.add(hash(p))
                    found.append((qualified, p))
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


class ModuleList(Module):
    """Layers in a list, each a child named by its index ("0", "1", ...), as PyTorch's ModuleList:
    self.blocks = axiom.nn.ModuleList([Dense(8, 8) for _ in range(3)])."""

    def __init__(self, layers=()):
        super().__init__()
        for layer in layers:
            self.append(layer)

    def append(self, layer):
        if not isinstance(layer, (Module, CppModule)):  # noqa: F405
            raise TypeError(f"[ModuleList] holds layers, got {type(layer).__name__}")
        setattr(self, str(len(self)), layer)
        return self

    def __len__(self):
        return sum(1 for name in vars(self) if name.isdigit())

    def __getitem__(self, index):
        return [getattr(self, str(i)) for i in range(len(self))][index]

    def __iter__(self):
        return iter(self[:])
