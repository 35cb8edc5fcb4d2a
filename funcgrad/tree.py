"""``funcgrad.tree``: short names for the pytree utilities (like ``jax.tree``).

Layer: kernel-adjacent surface; imports only funcgrad.tree_util.

>>> import funcgrad
>>> funcgrad.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
"""

from __future__ import annotations

from funcgrad.kernel.tree_util import (
    tree_all as all,  # noqa: A001 - mirrors jax.tree.all
)
from funcgrad.kernel.tree_util import (
    tree_flatten as flatten,
)
from funcgrad.kernel.tree_util import (
    tree_flatten_with_path as flatten_with_path,
)
from funcgrad.kernel.tree_util import (
    tree_leaves as leaves,
)
from funcgrad.kernel.tree_util import (
    tree_leaves_with_path as leaves_with_path,
)
from funcgrad.kernel.tree_util import (
    tree_map as map,  # noqa: A001 - mirrors jax.tree.map
)
from funcgrad.kernel.tree_util import (
    tree_map_with_path as map_with_path,
)
from funcgrad.kernel.tree_util import (
    tree_reduce as reduce,
)
from funcgrad.kernel.tree_util import (
    tree_structure as structure,
)
from funcgrad.kernel.tree_util import (
    tree_unflatten as unflatten,
)

__all__ = [
    "all",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "structure",
    "unflatten",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
