"""axiom.optim: SGD, Adam and AdamW, learning-rate schedules and gradient clipping (C++: optim/)."""
from ._axiom.optim import *  # noqa: F401,F403
