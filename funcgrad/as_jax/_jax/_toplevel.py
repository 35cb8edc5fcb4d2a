"""Names the alias's ``jax`` module has where ``funcgrad`` has none: ``Ref`` and ``new_ref``,
JAX's mutable array references, which libraries import at load time (flax's nnx picks its
``Ref`` type by ``hasattr(jax, "new_ref")``). funcgrad has no mutable references: nothing is a
``Ref``, and ``new_ref`` raises ``NotImplementedError`` saying so (flax reaches it only with its
opt-in ``use_ref`` / ``hijax`` Variables).
"""

from __future__ import annotations

__all__ = ["Ref", "new_ref"]


class Ref:
    """The type of a mutable array reference (funcgrad makes none)."""


def new_ref(init_val, *args, **kwargs):
    """Raises: funcgrad has no mutable array references."""
    raise NotImplementedError(
        "jax.new_ref (mutable array references) is not implemented by funcgrad; "
        "carry state functionally (flax: the default Variables, not use_ref=True)"
    )
