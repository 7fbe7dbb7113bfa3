"""axiom.models: the Axial Transformer and the other image models, their samplers, and the trainer
(C++: models/)."""
from ._axiom.models import *  # noqa: F401,F403
