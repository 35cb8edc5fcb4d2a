"""funcgrad.lax: the primitives as user-facing functions, with ``jax.lax``'s names and signatures.

Layer: surface. Re-exports ``funcgrad.lax.ops`` (elementwise operations, conversions, reductions,
contractions, shapes) and ``funcgrad.lax.slicing`` (slicing, gather/scatter, padding, sorting,
scans), ``funcgrad.lax.control_flow`` (``cond``, ``switch``, ``while_loop``, ``fori_loop``,
``scan``, ``map``) and ``funcgrad.lax.special`` (incomplete gamma/beta, zeta, Bessel). ``__all__`` is
the union of the modules' ``__all__`` (a new function is
listed once, in its module) and ``dir(funcgrad.lax)`` is ``__all__``.

lax is stricter than ``funcgrad.numpy``: no dtype promotion and no broadcasting (Python scalars
take their partner's dtype), so programs say exactly which primitives run.

>>> import numpy as np
>>> from funcgrad import lax
>>> lax.add(np.array([1.0, 2.0]), 1.0).tolist()
[2.0, 3.0]
"""

from __future__ import annotations

from funcgrad.lax import control_flow, extras, ops, slicing, special
from funcgrad.lax.control_flow import *  # noqa: F403 - each module's public names are its __all__
from funcgrad.lax.extras import *  # noqa: F403
from funcgrad.lax.ops import *  # noqa: F403
from funcgrad.lax.slicing import *  # noqa: F403
from funcgrad.lax.special import *  # noqa: F403

__all__ = sorted({*ops.__all__, *slicing.__all__, *control_flow.__all__, *special.__all__, *extras.__all__})


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
