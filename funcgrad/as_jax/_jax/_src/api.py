"""``jax._src.api`` under the alias: JAX's tutorial on defining primitives imports its
transformations from here (``api.jit``, ``api.grad``, ...); they are funcgrad's top-level ones.
"""

import funcgrad as _funcgrad
from funcgrad import _autodiff

# (JAX's module also holds the markers of ``jax.ad``: api_test reads ``api.GradRef``)
GradRef, GradValue, DontWant, DidntWant = (
    _autodiff.GradRef,
    _autodiff.GradValue,
    _autodiff.DontWant,
    _autodiff.DidntWant,
)


def __getattr__(name):
    return getattr(_funcgrad, name)
