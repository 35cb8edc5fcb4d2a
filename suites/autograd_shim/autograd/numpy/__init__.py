"""autograd.numpy is funcgrad.numpy, with autograd's extras: ``numpy.random`` (NumPy's stateful
generator, as autograd re-exports it), an ``ndarray`` that funcgrad arrays and tracers are
instances of, and NumPy's host-only utilities."""

import builtins as _builtins

import numpy as _onp

import funcgrad.numpy as _fnp
from funcgrad.core import Tracer as _Tracer
from funcgrad.numpy import *  # noqa: F403
from funcgrad.numpy import __all__ as _fnp_all

from ..tracer import Box, notrace_primitive, primitive  # noqa: F401
from . import fft, linalg, random  # noqa: F401

for _name in dir(_fnp):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_fnp, _name)


class _ArrayType(type):
    def __instancecheck__(cls, obj):
        return _builtins.isinstance(obj, (_onp.ndarray, _fnp.ndarray, _Tracer))


class ndarray(metaclass=_ArrayType):
    """What ``isinstance(x, np.ndarray)`` means under autograd: NumPy and funcgrad arrays, and
    traced values."""


# NumPy's utilities that have no traced meaning
for _name in (
    "errstate",
    "seterr",
    "geterr",
    "ndindex",
    "ndenumerate",
    "intc",
    "intp",
    "half",
    "longdouble",
    "asanyarray",
    "ascontiguousarray",
    "array2string",
    "may_share_memory",
    "nditer",
):
    if _name not in globals():
        globals()[_name] = getattr(_onp, _name)

__version__ = _onp.__version__
__all__ = list(_fnp_all) + ["ndarray", "random"]
