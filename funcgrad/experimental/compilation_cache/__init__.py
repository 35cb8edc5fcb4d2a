"""``funcgrad.experimental.compilation_cache``, as ``jax.experimental.compilation_cache``: its one
module, ``compilation_cache``.

Layer: surface. Imports its submodule.
"""

from funcgrad.experimental.compilation_cache import compilation_cache

__all__ = ["compilation_cache"]
