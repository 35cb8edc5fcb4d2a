"""autograd.misc: ``flatten`` and ``const_graph``."""

from .flatten import flatten  # noqa: F401
from .tracers import const_graph  # noqa: F401
