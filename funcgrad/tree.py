"""``funcgrad.tree``: short names for the pytree utilities (like ``jax.tree``).

Layer: surface; imports only funcgrad.tree_util (and, through it, the kernel's pytrees).

>>> import funcgrad
>>> funcgrad.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
"""

from __future__ import annotations

import dataclasses

from funcgrad.tree_util import (
    tree_all as all,  # noqa: A001 - mirrors jax.tree.all
)
from funcgrad.tree_util import (
    tree_broadcast as broadcast,
)
from funcgrad.tree_util import (
    tree_flatten as flatten,
)
from funcgrad.tree_util import (
    tree_flatten_with_path as flatten_with_path,
)
from funcgrad.tree_util import (
    tree_leaves as leaves,
)
from funcgrad.tree_util import (
    tree_leaves_with_path as leaves_with_path,
)
from funcgrad.tree_util import (
    tree_map as map,  # noqa: A001 - mirrors jax.tree.map
)
from funcgrad.tree_util import (
    tree_map_with_path as map_with_path,
)
from funcgrad.tree_util import (
    tree_reduce as reduce,
)
from funcgrad.tree_util import (
    tree_reduce_associative as reduce_associative,
)
from funcgrad.tree_util import (
    tree_structure as structure,
)
from funcgrad.tree_util import (
    tree_transpose as _tree_transpose,
)
from funcgrad.tree_util import (
    tree_unflatten as unflatten,
)

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


def static(**kwargs):
    """A static dataclass field (``jax.tree.static``): ``dataclasses.field(**kwargs)`` with
    ``metadata={"static": True}``, which ``register_dataclass`` keeps out of the leaves.

    >>> import dataclasses, funcgrad
    >>> @funcgrad.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: float
    ...     op: str = static(default="add")
    >>> funcgrad.tree.leaves(Op(1.0))
    [1.0]
    """
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of structure ``outer(inner)`` into ``inner(outer)`` (``jax.tree.transpose``).

    >>> transpose(structure([0, 0]), structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    return _tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)
