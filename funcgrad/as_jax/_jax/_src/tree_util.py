"""``jax._src.tree_util`` under the alias: ``_registry``, which libraries (flax's nnx) test types
against (``type(x) in _registry``), is a view of funcgrad's pytree registry; funcgrad's
``tree_util`` names are here too.

>>> tuple in _registry and int not in _registry
True
"""

from funcgrad.kernel.tree_util import registry as _pytrees
from funcgrad.tree_util import *  # noqa: F403


class _RegistryView:
    """``cls in _registry``: whether ``cls`` is a pytree node type (built in or registered)."""

    def __contains__(self, cls) -> bool:
        return isinstance(cls, type) and _pytrees.is_node(cls)


_registry = _RegistryView()
