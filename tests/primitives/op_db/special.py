"""op_db entries: the special-function primitives (primitives/special.py)."""

from __future__ import annotations

import dataclasses

import scipy.special as sp
from funcgrad.primitives import special

from op_db._base import _arr, _away
from op_db.elementwise import _pair, _uniform, binary, unary

# fmt: off
OPS = [
    # x > 1 and q > 0: the domain where the Hurwitz zeta function is finite and smooth; not
    # differentiable (jax.lax.zeta has no rule: scipy.special.zeta's custom derivative is the one).
    dataclasses.replace(
        binary(special.zeta_p, lambda x, q: sp.zeta(x, q).astype(x.dtype),
               _pair(_uniform(1.5, 4.0), _uniform(0.5, 3.0)), rtol=1e-10),
        differentiable=False, derivative_error=NotImplementedError),
    unary(special.bessel_i0e_p, lambda x: sp.i0e(x).astype(x.dtype),
          lambda rng, s, d: _away(rng, s, d, 0.2, 12.0), rtol=1e-13),
    unary(special.bessel_i1e_p, lambda x: sp.i1e(x).astype(x.dtype),
          lambda rng, s, d: _arr(rng, s, d, -12.0, 12.0), rtol=1e-13),
]
# fmt: on
