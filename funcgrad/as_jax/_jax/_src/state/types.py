"""``jax._src.state.types`` under the alias: ``AbstractRef``, the type of a mutable array reference
(funcgrad's own, ``funcgrad.ref.AbstractRef``: ``jax.typeof(jax.new_ref(x))`` is one), and the
effects of reading and writing one (``RefEffect``, ``ReadEffect``, ``WriteEffect``, ``AccumEffect``:
``make_jaxpr(f).effects`` of a function touching Refs, funcgrad/_effects.py).
"""

from funcgrad._effects import AccumEffect, ReadEffect, RefEffect, WriteEffect
from funcgrad.ref import AbstractRef

__all__ = ["AbstractRef", "AccumEffect", "ReadEffect", "RefEffect", "WriteEffect"]
