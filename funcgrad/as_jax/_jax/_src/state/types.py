"""``jax._src.state.types`` under the alias: ``AbstractRef``, the type of a mutable array reference
(funcgrad's own, ``funcgrad.ref.AbstractRef``: ``jax.typeof(jax.new_ref(x))`` is one).
"""

from funcgrad.ref import AbstractRef

__all__ = ["AbstractRef"]
