"""``jax._src.tree_util`` under the alias: ``_registry``, which libraries (flax's nnx) test types
against (``type(x) in _registry``), is a view of funcgrad's pytree registry; ``prefix_errors``
(flax's tests) says where one tree is not a prefix of another; funcgrad's ``tree_util`` names are
here too.

>>> tuple in _registry and int not in _registry
True
"""

import collections

from funcgrad.kernel.tree_util import PyTreeDef
from funcgrad.kernel.tree_util import registry as _pytrees
from funcgrad.tree_util import *  # noqa: F403
from funcgrad.tree_util import _prefix_errors

# JAX's registry that jit's dispatch flattens with: funcgrad's transformations' registry (the same
# nodes as ``default_registry``, plus the typed keys' internal node, NOTE: [public pytree registry]).
dispatch_registry = _pytrees


def treedef_is_strict_leaf(treedef) -> bool:
    """Whether ``treedef`` is one leaf (JAX's helper; ``None`` is a node of no leaves).

    >>> from funcgrad.tree_util import tree_structure
    >>> treedef_is_strict_leaf(tree_structure(1.0)), treedef_is_strict_leaf(tree_structure((1.0,)))
    (True, False)
    """
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def broadcast_flattened_prefix_with_treedef(prefix_leaves, prefix_treedef, full_treedef) -> list:
    """The leaves of a prefix tree (``prefix_leaves`` of ``prefix_treedef``), each repeated for
    every leaf of the subtree of ``full_treedef`` it stands for, as JAX's internal helper
    (``ValueError`` where the first is not a prefix of the second).

    >>> from funcgrad.tree_util import tree_structure
    >>> broadcast_flattened_prefix_with_treedef([1, 2], tree_structure((0, 0)), tree_structure(([0, 0], 0)))
    [1, 1, 2]
    """
    out = []

    strict_leaf = treedef_is_strict_leaf

    def walk(start, end, prefix, full):
        if strict_leaf(prefix):
            out.extend(prefix_leaves[start:end] * full.num_leaves)
            return
        if strict_leaf(full):
            raise ValueError("`prefix_treedef` is not a prefix of `full_treedef`")
        if prefix.node_data() != full.node_data():
            raise ValueError(f"expected {full.node_data()}, got {prefix.node_data()}")
        i = start
        for p_child, f_child in zip(prefix.children(), full.children(), strict=True):
            walk(i, i + p_child.num_leaves, p_child, f_child)
            i += p_child.num_leaves

    walk(0, len(prefix_leaves), prefix_treedef, full_treedef)
    return out


_RegistryEntry = collections.namedtuple("_RegistryEntry", ["to_iter", "from_iter"])


class _RegistryView:
    """``cls in _registry``: whether ``cls`` is a pytree node type (built in or registered);
    ``_registry[cls]``: JAX's entry ``(to_iter, from_iter)``, one level of flattening
    (``to_iter(x) -> (children, aux)``) and its inverse (``from_iter(aux, children) -> x``), which
    jaxlie's manifold helpers walk trees with (a ``KeyError`` for a leaf type, as JAX's dict).

    >>> to_iter, from_iter = _registry[dict]
    >>> to_iter({"b": 1, "a": 2}), from_iter(("a", "b"), [5, 6])
    (((2, 1), ('a', 'b')), {'a': 5, 'b': 6})
    """

    def __contains__(self, cls) -> bool:
        return isinstance(cls, type) and _pytrees.is_node(cls)

    def __getitem__(self, cls) -> _RegistryEntry:
        if cls not in self:
            raise KeyError(cls)

        def from_iter(aux, children):
            children = list(children)
            node = PyTreeDef.from_node_data_and_children(_pytrees, (cls, aux), [_LEAF] * len(children))
            return node.unflatten(children)

        return _RegistryEntry(_pytrees.flatten_one_level, from_iter)


_LEAF = _pytrees.flatten(0)[1]


_registry = _RegistryView()


def prefix_errors(prefix_tree, full_tree, is_leaf=None) -> list:
    """Where ``prefix_tree`` is not a pytree prefix of ``full_tree``: one function per mismatch,
    ``e(name)`` giving the ``ValueError`` that names its key path (``in_axes.y``), as JAX's
    internal helper (flax's tests call it).

    >>> [e] = prefix_errors({"a": 0, "b": [0]}, {"a": 1.0, "b": 2.0})
    >>> print(str(e("in_axes")).splitlines()[1])
        in_axes['b']
    >>> [e] = prefix_errors([0, 0], [1, 2, 3])  # (JAX's words, its tree_util_test's)
    >>> print(str(e("x")).splitlines()[0])
    pytree structure error: different lengths of list at key path
    """
    return list(_prefix_errors(prefix_tree, full_tree, (), is_leaf))
