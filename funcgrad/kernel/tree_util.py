"""Pytrees: nested tuples, lists, dicts, None, namedtuples, dataclasses and registered nodes.

Layer: kernel. Imports only the standard library and jaxlib's C++ pytree extension.

# NOTE: [pytree registry]
# Flattening is on the hot path of every transformation (and of jit dispatch), so it uses jaxlib's
# C++ pytree registry (~1 µs per flatten), through a registry instance of our own: types registered
# here are not registered with JAX and vice versa. This module is the one place outside
# ``xla_bridge`` that imports jaxlib, and it imports only the standalone pytree extension, not
# XLA.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

from jaxlib._jax import pytree as _pytree

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "broadcast_prefix",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_unflatten",
    "treedef_is_leaf",
    "treedef_tuple",
]

registry = _pytree.PyTreeRegistry(
    enable_none=True, enable_tuple=True, enable_namedtuple=True, enable_list=True, enable_dict=True
)
# NOTE: [public pytree registry]
# Two registries with the same nodes but one: ``registry`` is the one funcgrad's transformations
# flatten with; ``public_registry`` is the one the public tree utilities (funcgrad.tree_util,
# funcgrad.tree, jax.tree_util under the alias) flatten with. A node registered with
# ``register_internal_node`` exists in the first only: typed PRNG key arrays, which the
# transformations see through to their raw data, but which users see as leaves, as JAX's key
# arrays are (funcgrad/random/_keys.py). Every other registration goes into both.
public_registry = _pytree.PyTreeRegistry(
    enable_none=True, enable_tuple=True, enable_namedtuple=True, enable_list=True, enable_dict=True
)
_REGISTRIES = (registry, public_registry)

# A treedef pickles (and deep-copies) with a reference to its registry: by this module and name,
# as JAX names its default registry (flax deep-copies graph definitions holding treedefs).
registry.__module__ = public_registry.__module__ = __name__
registry.__name__ = "registry"
public_registry.__name__ = "public_registry"

PyTreeDef = _pytree.PyTreeDef
SequenceKey = _pytree.SequenceKey
DictKey = _pytree.DictKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """Leaves and structure of ``tree`` (dict keys are visited in sorted order).

    >>> tree_flatten({"w": [1, 2], "b": None})
    ([1, 2], PyTreeDef({'b': None, 'w': [*, *]}))
    """
    return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of structure ``treedef`` from ``leaves``.

    >>> leaves, treedef = tree_flatten((1, [2, 3]))
    >>> tree_unflatten(treedef, [x * 10 for x in leaves])
    (10, [20, 30])
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in flattening order: ``tree_leaves({'a': 1, 'b': (2, 3)}) == [1, 2, 3]``."""
    return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of ``tree``: ``tree_structure((1, 2))`` is ``PyTreeDef((*, *))``."""
    return registry.flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leafwise; ``rest`` must have ``tree``'s structure (or extend it).

    >>> tree_map(lambda x, y: x + y, {"a": 1, "b": 2}, {"a": 10, "b": 20})
    {'a': 11, 'b': 22}
    """
    return map_over(registry, f, tree, rest, is_leaf)


def map_over(reg, f: Callable, tree: Any, rest: tuple, is_leaf, mismatch: Callable | None = None) -> Any:
    """``tree_map`` over the registry ``reg`` (the transformations' or the public one, NOTE:
    [public pytree registry]); ``rest`` is a tuple of trees. ``mismatch(other, error)``, when
    given, is the exception raised for a tree of ``rest`` that ``tree`` is not a prefix of (the
    public functions' JAX words); ``f``'s own errors pass through untouched."""
    leaves, treedef = reg.flatten(tree, is_leaf)
    others = _flatten_rest(treedef, rest, mismatch)
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def map_with_path_over(
    reg,
    f: Callable,
    tree: Any,
    rest: tuple,
    is_leaf,
    is_leaf_takes_path: bool,
    mismatch: Callable | None = None,
) -> Any:
    """``tree_map_with_path`` over the registry ``reg`` (``mismatch`` as ``map_over``'s)."""
    pairs, treedef = reg.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))
    others = _flatten_rest(treedef, rest, mismatch)
    return treedef.unflatten(f(kp, x, *xs) for (kp, x), *xs in zip(pairs, *others))


def _flatten_rest(treedef: PyTreeDef, rest: tuple, mismatch: Callable | None) -> list:
    if mismatch is None:
        return [treedef.flatten_up_to(r) for r in rest]
    others = []
    for r in rest:
        try:
            others.append(treedef.flatten_up_to(r))
        except Exception as e:  # noqa: BLE001 - jaxlib raises ValueError or TypeError here
            raise mismatch(r, e) from None
    return others


def broadcast_prefix_over(reg, prefix_tree: Any, full_tree: Any, is_leaf) -> list:
    """``broadcast_prefix`` over the registry ``reg``."""
    result: list = []
    prefix_leaves, prefix_def = reg.flatten(
        prefix_tree, lambda x: x is None if is_leaf is None else is_leaf(x)
    )
    for leaf, sub in zip(prefix_leaves, prefix_def.flatten_up_to(full_tree)):
        result.extend([leaf] * len(reg.flatten(sub)[0]))
    return result


def _path_predicate(is_leaf: Callable | None, is_leaf_takes_path: bool):
    # jaxlib's flatten_with_path calls its predicate as ``(key_path, node)``; JAX's ``is_leaf`` takes
    # the node alone unless ``is_leaf_takes_path=True``.
    if is_leaf is None or is_leaf_takes_path:
        return is_leaf
    return lambda _, x: is_leaf(x)


def tree_flatten_with_path(tree: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False):
    """``([(key_path, leaf), ...], treedef)``; key paths are tuples of Sequence/Dict/GetAttr keys.

    >>> tree_flatten_with_path({"a": (1, 2)}, is_leaf=lambda x: isinstance(x, tuple))[0]
    [((DictKey(key='a'),), (1, 2))]
    """
    return registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False
) -> list:
    """``[(key_path, leaf), ...]``: ``tree_leaves_with_path({'a': [5]})`` pairs ``5`` with
    ``(DictKey('a'), SequenceKey(0))``."""
    return registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))[0]


def tree_map_with_path(
    f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False
) -> Any:
    """Like ``tree_map`` but ``f(key_path, leaf, *others)``."""
    return map_with_path_over(registry, f, tree, rest, is_leaf, is_leaf_takes_path)


def keystr(path: tuple, *, simple: bool = False, separator: str = "") -> str:
    """Readable text of a key path, as JAX's: each key as Python would index with it, or with
    ``simple=True`` just its name, index or dict key; ``separator`` goes between keys.

    >>> path = (DictKey("a"), SequenceKey(0), GetAttrKey("w"))
    >>> keystr(path), keystr(path, simple=True, separator="/")
    ("['a'][0].w", 'a/0/w')
    """
    return separator.join(_simple_keystr(k) if simple else _keystr(k) for k in path)


def _keystr(k) -> str:
    if isinstance(k, SequenceKey):
        return f"[{k.idx}]"
    if isinstance(k, DictKey):
        return f"[{k.key!r}]"
    if isinstance(k, GetAttrKey):
        return f".{k.name}"
    if isinstance(k, FlattenedIndexKey):
        return f"[<flat index {k.key}>]"
    return str(k)  # (any other key as it prints, as JAX's: a custom node's key "x" is x)


def _simple_keystr(k) -> str:
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, GetAttrKey):
        return k.name
    if isinstance(k, (DictKey, FlattenedIndexKey)):
        return str(k.key)
    return str(k)


def tree_reduce(f: Callable, tree: Any, initializer: Any = ..., is_leaf=None) -> Any:
    """``functools.reduce`` over the leaves: ``tree_reduce(operator.add, [1, (2, 3)]) == 6``."""
    leaves = tree_leaves(tree, is_leaf)
    return functools.reduce(f, leaves) if initializer is ... else functools.reduce(f, leaves, initializer)


def tree_all(tree: Any) -> bool:
    """``all`` over the leaves."""
    return all(tree_leaves(tree))


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_tuple(treedefs) -> PyTreeDef:
    """The structure of a tuple whose children have structures ``treedefs``."""
    return _pytree.treedef_tuple(registry, list(treedefs))


def all_leaves(xs: Iterable[Any]) -> bool:
    return _pytree.all_leaves(registry, xs)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Register ``nodetype``: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x``.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves(Pair(1, 2))
    [1, 2]
    """
    for r in _REGISTRIES:
        r.register_node(nodetype, flatten_func, unflatten_func)


def register_internal_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Register ``nodetype`` for funcgrad's transformations only: the public tree utilities keep
    it a leaf (NOTE: [public pytree registry])."""
    registry.register_node(nodetype, flatten_func, unflatten_func)


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable,
    unflatten_func: Callable,
    flatten_func: Callable | None = None,
) -> None:
    """Register ``nodetype`` with key paths: ``flatten_with_keys(x) -> ([(key, child)...], aux)``."""

    def flatten(x):
        pairs, aux = flatten_with_keys(x)
        return [c for _, c in pairs], aux

    for r in _REGISTRIES:
        r.register_node(nodetype, flatten_func or flatten, unflatten_func, flatten_with_keys)


# The dict subclasses that are pytree nodes in JAX too: an OrderedDict keeps its keys' order, a
# defaultdict sorts them as a dict does and keeps its default factory (numpyro's models pass
# OrderedDicts of parameters to ravel_pytree).
register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values, strict=True)),
)
register_pytree_with_keys(
    collections.defaultdict,
    lambda d: ([(DictKey(k), d[k]) for k in sorted(d)], (d.default_factory, tuple(sorted(d)))),
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values, strict=True)),
)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten(self)`` and ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None, drop_fields=()) -> type:
    """Register a dataclass: ``data_fields`` are children (arrays), ``meta_fields`` static.

    Usable as a decorator; without field lists, fields marked ``field(metadata={'static': True})``
    are static and all others are data. For a dataclass the two lists must hold exactly its
    ``init=True`` fields but ``drop_fields`` (left out of the pytree), each once; JAX's errors.

    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...     w: float
    ...     b: float
    >>> tree_leaves(Params(1.0, 2.0))
    [1.0, 2.0]
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified when either "
                f"is specified. Got {data_fields=} {meta_fields=}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when nodetype is not "
                f"a dataclass. Got {nodetype=}."
            )
        fields = dataclasses.fields(nodetype)  # (all of them, as JAX's: init=False ones must be dropped)
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    meta_fields, data_fields = tuple(meta_fields), tuple(data_fields)
    if dataclasses.is_dataclass(nodetype):
        # (built as JAX's: a set's printed order follows how it was made, and the message prints it)
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        if {*meta_fields, *data_fields} != init_fields:
            msg = (
                "data_fields and meta_fields must include all dataclass fields with ``init=True`` "
                "and only them."
            )
            if missing := init_fields - {*meta_fields, *data_fields}:
                msg += f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
            if unexpected := {*meta_fields, *data_fields} - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")
    for r in _REGISTRIES:
        r.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
    return nodetype


def broadcast_prefix(prefix_tree: Any, full_tree: Any, is_leaf=None) -> list:
    """Leaves of ``prefix_tree`` repeated to match the leaves of ``full_tree`` (for ``in_axes``).

    Raises ``ValueError`` if ``prefix_tree`` is not a prefix of ``full_tree``'s structure.
    """
    return broadcast_prefix_over(registry, prefix_tree, full_tree, is_leaf)
