"""axiom.data: the datasets (Debian's dataset-fashion-mnist by default; C++: data/)."""
from ._axiom.data import *  # noqa: F401,F403
