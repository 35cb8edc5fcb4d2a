"""funcgrad.lax: the primitives as user-facing functions, with ``jax.lax``'s names and signatures.

Layer: surface. Re-exports ``funcgrad.lax.ops`` (elementwise operations, conversions, reductions,
contractions, shapes) and ``funcgrad.lax.slicing`` (slicing, gather/scatter, padding, sorting,
scans). Structured control flow (``cond``, ``while_loop``, ``fori_loop``, ``scan``) belongs in
``funcgrad.lax.control_flow``, re-exported here by one more import line.

lax is stricter than ``funcgrad.numpy``: no dtype promotion and no broadcasting (Python scalars
take their partner's dtype), so programs say exactly which primitives run.

>>> import numpy as np
>>> from funcgrad import lax
>>> lax.add(np.array([1.0, 2.0]), 1.0).tolist()
[2.0, 3.0]
"""

from __future__ import annotations

from funcgrad.lax.control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: F401
from funcgrad.lax.ops import *  # noqa: F403 - the public names of ops are its __all__
from funcgrad.lax.ops import __all__ as _ops_all
from funcgrad.lax.slicing import *  # noqa: F403
from funcgrad.lax.slicing import __all__ as _slicing_all

__all__ = [*_ops_all, *_slicing_all, "cond", "fori_loop", "map", "scan", "switch", "while_loop"]
