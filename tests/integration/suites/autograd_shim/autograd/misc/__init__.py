"""autograd.misc: ``flatten`` and ``const_graph``."""

from .flatten import flatten, flatten_func  # noqa: F401
from .tracers import const_graph  # noqa: F401
