"""funcgrad.numpy: NumPy's API over funcgrad arrays — differentiable, batchable, compilable.

Layer: surface. Every function is a composition of primitives from the catalog (``primitives``);
none adds rules of its own (a few use ``custom_jvp`` where a composition's derivative would be NaN).
Importing this package installs the operators and methods of ``Array`` and of tracers
(``_methods``, NOTE: [array methods]).

Semantics are NumPy 2's, with JAX's conventions where NumPy has none:

- dtypes: NEP 50 promotion (Python scalars are weak), float64 is the default float, float32 stays
  float32 (``_dtypes``, NOTE: [weak types]); integer inputs of transcendental functions compute in
  float64; where NumPy computes in float64 whatever the input (``geomspace``, ``interp``, ``cov``,
  ``vander``, ``bincount`` weights), float32 inputs stay float32, as in jax.numpy.
- derivatives: JAX's subgradient conventions (``abs'(0) = 0``, ties of ``max`` split equally, no NaN
  from where-style formulas: NOTE: [no NaN gradients]); integer- and bool-valued functions have zero
  derivatives.
- indexing: NumPy's rules, JAX's out-of-bounds behaviour and ``x.at[idx]`` updates (NOTE:
  [indexing semantics]).

Modules: ``_core`` (conversion, promotion, elementwise operands), ``_operands`` (array-likeness,
shapes, broadcasting of shapes, axes), ``_dtypes``, ``constants``, ``ufuncs``, ``transcendental``,
``complexes`` (complex parts and order), ``reductions``, ``creation``, ``manipulation``, ``rearrangement``,
``contractions``, ``indexing``, ``lookup``, ``sorting``, ``numeric``, ``padding``, ``misc``,
``vectorization``, ``_methods``, and the public subpackages ``linalg`` (on the LAPACK primitives;
``_linalg`` holds the solves and determinants it shares with ``funcgrad.scipy.linalg``) and ``fft``
(the Fourier transforms).

The namespace is derived, never listed twice: each module's ``__all__`` names its public functions,
and this package's ``__all__`` is their union (plus ``linalg`` and ``fft``). A new function is exposed by
defining it in its module and adding it to that module's ``__all__``. ``dir(funcgrad.numpy)`` is
``__all__``: helpers and implementation modules stay out of sight.

>>> import funcgrad.numpy as fnp
>>> fnp.sum(fnp.sin(fnp.zeros(3)))
Array(0., dtype=float64)
"""

from __future__ import annotations

import types

from funcgrad._placement import takes_out_sharding as _takes_out_sharding
from funcgrad.numpy import (
    _arraylike,
    _methods,  # noqa: F401 - imported for its side effect (operators and methods on Array and Tracer)
    fft,  # a public subpackage, listed in __all__ below
    linalg,  # a public subpackage, listed in __all__ below
)
from funcgrad.numpy._core import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.numpy._dtypes import *  # noqa: F403
from funcgrad.numpy._operands import *  # noqa: F403
from funcgrad.numpy.array_api import __array_api_version__, __array_namespace_info__  # noqa: F401
from funcgrad.numpy.complexes import *  # noqa: F403
from funcgrad.numpy.constants import *  # noqa: F403
from funcgrad.numpy.contractions import *  # noqa: F403
from funcgrad.numpy.creation import *  # noqa: F403
from funcgrad.numpy.editing import *  # noqa: F403
from funcgrad.numpy.floatbits import *  # noqa: F403
from funcgrad.numpy.histograms import *  # noqa: F403
from funcgrad.numpy.host_io import *  # noqa: F403
from funcgrad.numpy.index_tricks import *  # noqa: F403
from funcgrad.numpy.indexing import *  # noqa: F403
from funcgrad.numpy.lookup import *  # noqa: F403
from funcgrad.numpy.manipulation import *  # noqa: F403
from funcgrad.numpy.misc import *  # noqa: F403
from funcgrad.numpy.numeric import *  # noqa: F403
from funcgrad.numpy.padding import *  # noqa: F403
from funcgrad.numpy.polynomial import *  # noqa: F403
from funcgrad.numpy.rearrangement import *  # noqa: F403
from funcgrad.numpy.reductions import *  # noqa: F403
from funcgrad.numpy.scalar_types import *  # noqa: F403
from funcgrad.numpy.setops import *  # noqa: F403
from funcgrad.numpy.sorting import *  # noqa: F403
from funcgrad.numpy.transcendental import *  # noqa: F403
from funcgrad.numpy.ufunc_instances import *  # noqa: F403 - add, multiply, ...: ufunc objects
from funcgrad.numpy.ufunc_objects import *  # noqa: F403
from funcgrad.numpy.ufuncs import *  # noqa: F403
from funcgrad.numpy.vectorization import *  # noqa: F403

# The public functions refuse lists where JAX's do (NOTE: [array-like arguments]); the modules'
# own functions, which the library calls, stay as they are.
_arraylike.install(globals())


def _with_out_sharding(f):
    """JAX's ``out_sharding=`` of a public constructor (NOTE: [sharding in types]): the result
    resharded to it. The library's own calls of its module's function stay as they are; like the
    list check in front (NOTE: [array-like arguments]), the module's function is kept as
    ``__wrapped_unchecked__``."""
    wrapped = _takes_out_sharding(f)
    wrapped.__wrapped_unchecked__ = getattr(f, "__wrapped_unchecked__", f)
    wrapped.__module__, wrapped.__qualname__ = __name__, f.__name__  # (pickled by reference, here)
    return wrapped


array, asarray, broadcast_to = map(_with_out_sharding, (array, asarray, broadcast_to))  # noqa: F405

# Importing a submodule binds it in this package, so the modules are found here rather than listed
# a second time: those with an ``__all__`` (the public subpackages aside: they stay namespaces of
# their own) make up this namespace. (tests/surface/api/test_namespaces.py checks that each one is
# star-imported above.)
_SUBPACKAGES = (fft, linalg)
_MODULES = [
    m
    for m in list(globals().values())
    if isinstance(m, types.ModuleType)
    and m.__name__.startswith(__name__ + ".")
    and hasattr(m, "__all__")
    and m not in _SUBPACKAGES
]
__all__ = sorted({"fft", "linalg", *(name for module in _MODULES for name in module.__all__)})


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
