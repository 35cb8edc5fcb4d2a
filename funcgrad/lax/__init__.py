"""funcgrad.lax: the primitives as user-facing functions, with ``jax.lax``'s names and signatures.

Layer: surface. Re-exports ``funcgrad.lax.ops`` (elementwise operations, conversions, reductions,
contractions), ``funcgrad.lax.shapes`` (broadcasting, reshaping, ``iota``, ``full``),
``funcgrad.lax.slicing`` (slicing, gather/scatter, padding, sorting,
scans), ``funcgrad._control_flow`` (``cond``, ``switch``, ``while_loop``, ``fori_loop``,
``scan``, ``map``; a module below funcgrad.numpy, which loops with them, while funcgrad.lax is
above funcgrad.numpy), ``funcgrad.lax.fourier`` (``fft``, ``FftType``), ``funcgrad.lax.implicit``
(``custom_linear_solve``, ``custom_root``), ``funcgrad.lax.convolution`` (``conv_general_dilated``
and its friends), ``funcgrad.lax.windowed`` (``reduce_window``), ``funcgrad.lax.reducing`` (the generic
``reduce``), ``funcgrad.lax.rng`` (XLA's ``rng_bit_generator``, ``rng_uniform``), ``funcgrad.lax.special``
(incomplete gamma/beta, zeta, Bessel), ``funcgrad.lax.parallel`` (collectives over named axes:
``psum``, ``all_gather``, ``axis_index``, ...) and ``funcgrad.lax.utilities`` (``empty``, ``dtype``,
``optimization_barrier``, ``reduce_precision``), and ``funcgrad.lax.primitive_objects`` (the
primitives themselves, ``add_p``, ``stop_gradient_p``, ...). ``__all__`` is the union of the
modules' ``__all__`` (a new function is listed once, in its module) and ``dir(funcgrad.lax)`` is ``__all__``.
``funcgrad.lax.linalg`` (``jax.lax.linalg``) is a namespace of its own, like
``funcgrad.numpy.linalg``.

lax is stricter than ``funcgrad.numpy``: no dtype promotion and no broadcasting (Python scalars
take their partner's dtype), so programs say exactly which primitives run.

>>> import numpy as np
>>> from funcgrad import lax
>>> lax.add(np.array([1.0, 2.0]), 1.0).tolist()
[2.0, 3.0]
"""

from __future__ import annotations

import types

from funcgrad import _control_flow
from funcgrad._control_flow import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.lax import linalg  # noqa: F401 - a namespace of its own
from funcgrad.lax.accuracy import *  # noqa: F403
from funcgrad.lax.convolution import *  # noqa: F403
from funcgrad.lax.extras import *  # noqa: F403
from funcgrad.lax.fourier import *  # noqa: F403
from funcgrad.lax.implicit import *  # noqa: F403
from funcgrad.lax.ops import *  # noqa: F403
from funcgrad.lax.parallel import *  # noqa: F403
from funcgrad.lax.primitive_objects import *  # noqa: F403
from funcgrad.lax.reducing import *  # noqa: F403
from funcgrad.lax.rng import *  # noqa: F403
from funcgrad.lax.shapes import *  # noqa: F403
from funcgrad.lax.slicing import *  # noqa: F403
from funcgrad.lax.special import *  # noqa: F403
from funcgrad.lax.utilities import *  # noqa: F403
from funcgrad.lax.windowed import *  # noqa: F403

# Importing a submodule binds it in this package, so the modules are found here rather than listed
# a second time (as in funcgrad.numpy): those with an ``__all__``, less the namespace ``linalg``.
_MODULES = [
    m
    for m in list(globals().values())
    if isinstance(m, types.ModuleType)
    and (m.__name__.startswith(__name__ + ".") or m is _control_flow)
    and hasattr(m, "__all__")
    and m is not linalg
]
__all__ = sorted({name for module in _MODULES for name in module.__all__})


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
