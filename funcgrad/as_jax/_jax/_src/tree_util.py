"""``jax._src.tree_util`` under the alias: ``_registry``, which libraries (flax's nnx) test types
against (``type(x) in _registry``), is a view of funcgrad's pytree registry; ``prefix_errors``
(flax's tests) says where one tree is not a prefix of another; funcgrad's ``tree_util`` names are
here too.

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


def _children(x, is_leaf):
    """(key, child) pairs one level down ``x``, and ``x``'s one-level structure."""
    one_level = lambda y: y is not x or (is_leaf is not None and is_leaf(y))  # noqa: E731
    pairs, treedef = tree_flatten_with_path(x, is_leaf=one_level)  # noqa: F405
    return [(path[0], child) for path, child in pairs], treedef


def prefix_errors(prefix_tree, full_tree, is_leaf=None) -> list:
    """Where ``prefix_tree`` is not a pytree prefix of ``full_tree``: one function per mismatch,
    ``e(name)`` giving the ``ValueError`` that names its key path (``in_axes.y``), as JAX's
    internal helper (flax's tests call it).

    >>> [e] = prefix_errors({"a": 0, "b": [0]}, {"a": 1.0, "b": 2.0})
    >>> print(str(e("in_axes")).splitlines()[1])
        in_axes['b']
    """
    return list(_prefix_errors(prefix_tree, full_tree, (), is_leaf))


def _prefix_errors(prefix, full, path, is_leaf):
    def error(what, detail):
        def make(name):
            where = name + keystr(path)  # noqa: F405
            text = detail.replace("<name>", name)
            return ValueError(f"pytree structure error: {what} at key path\n    {where}\n{text}")

        return make

    if prefix is None or (is_leaf is not None and is_leaf(prefix)) or treedef_is_leaf(tree_structure(prefix)):  # noqa: F405
        return
    if type(prefix) is not type(full):
        yield error(
            "different types",
            f"At that key path, the prefix pytree <name> has a subtree of type\n    {type(prefix)}\n"
            f"but at the same key path the full pytree has a subtree of different type\n    {type(full)}.",
        )
        return
    (p_children, p_def), (f_children, f_def) = _children(prefix, is_leaf), _children(full, None)
    p_keys, f_keys = [k for k, _ in p_children], [k for k, _ in f_children]
    if p_keys != f_keys:
        yield error(
            "different pytree keys" if len(p_keys) == len(f_keys) else "different numbers of pytree children",
            f"At that key path, the prefix pytree <name> has a subtree of type {type(prefix)} with keys\n"
            f"    {p_keys}\nbut at the same key path the full pytree has a subtree with keys\n    {f_keys}.",
        )
        return
    if p_def != f_def:
        yield error(
            "different pytree metadata",
            f"The prefix pytree <name> has the node\n    {p_def}\nwhere the full pytree has\n    {f_def}.",
        )
        return
    for (key, p), (_, f) in zip(p_children, f_children):
        yield from _prefix_errors(p, f, (*path, key), is_leaf)
