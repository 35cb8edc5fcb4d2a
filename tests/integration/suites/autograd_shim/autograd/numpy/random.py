"""autograd.numpy.random is NumPy's stateful generator (autograd re-exports it unchanged)."""

from numpy.random import *  # noqa: F403
from numpy.random import RandomState, seed  # noqa: F401
