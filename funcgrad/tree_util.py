"""``funcgrad.tree_util``: the pytree utilities (JAX's ``jax.tree_util`` names).

Layer: surface. Re-exports the kernel's pytree module (``funcgrad/kernel/tree_util.py``), whose
registry is jaxlib's C++ one (NOTE: [pytree registry]).

>>> from funcgrad.tree_util import tree_map
>>> tree_map(lambda x: x + 1, {"a": 1, "b": [2, 3]})
{'a': 2, 'b': [3, 4]}
"""

from __future__ import annotations

from funcgrad.kernel import tree_util as _kernel_tree_util
from funcgrad.kernel.tree_util import *  # noqa: F403 - the public names, listed in __all__

__all__ = list(_kernel_tree_util.__all__)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
