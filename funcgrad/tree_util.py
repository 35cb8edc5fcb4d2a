"""``funcgrad.tree_util``: the pytree utilities (JAX's ``jax.tree_util`` names).

Layer: surface. Re-exports the kernel's pytree module (``funcgrad/kernel/tree_util.py``), whose
registry is jaxlib's C++ one (NOTE: [pytree registry]), and adds the utilities built on it:
``Partial`` (a ``functools.partial`` that is a pytree), ``register_static``,
``register_pytree_with_keys_class``, ``tree_transpose``, ``tree_broadcast``,
``tree_reduce_associative``, ``flatten_one_level``, ``treedef_children``, ``is_tree_node``.

>>> from funcgrad.tree_util import tree_map
>>> tree_map(lambda x: x + 1, {"a": 1, "b": [2, 3]})
{'a': 2, 'b': [3, 4]}
"""

from __future__ import annotations

import difflib
import functools
import textwrap
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from funcgrad.kernel import tree_util as _kernel_tree_util
from funcgrad.kernel.tree_util import *  # noqa: F403 - the kernel's public names, listed in __all__
from funcgrad.kernel.tree_util import (
    PyTreeDef,
    _path_predicate,
    _pytree,
    broadcast_prefix_over,
    keystr,
    map_over,
    map_with_path_over,
    public_registry,
    tree_unflatten,
)

__all__ = sorted(
    {
        *_kernel_tree_util.__all__,
        "KeyEntry",
        "KeyPath",
        "Partial",
        "default_registry",
        "flatten_one_level",
        "flatten_one_level_with_keys",
        "is_tree_node",
        "register_pytree_with_keys_class",
        "register_static",
        "tree_broadcast",
        "tree_reduce_associative",
        "tree_transpose",
        "treedef_children",
    }
)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


# The registry the public utilities flatten with (jaxlib's C++ registry type, our instance): the
# transformations' one less the nodes that users see as leaves, typed PRNG keys (NOTE: [public
# pytree registry] in funcgrad/kernel/tree_util.py).
default_registry = public_registry


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``; ``None`` is an empty node, a typed PRNG key array a leaf.

    >>> tree_flatten({"a": 1, "b": (2, None)})
    ([1, 2], PyTreeDef({'a': *, 'b': (*, None)}))
    """
    return public_registry.flatten(tree, is_leaf)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in order: ``tree_leaves({'a': 1, 'b': [2, 3]}) == [1, 2, 3]``."""
    return public_registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree``."""
    return public_registry.flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied leaf by leaf (``rest`` must have ``tree``'s structure, or extend it).

    >>> tree_map(lambda a, b: a * b, [1, (2, 3)], [10, (20, 30)])
    [10, (40, 90)]
    """
    mismatch = functools.partial(_structure_error, "tree_map tree", tree, is_leaf)
    return map_over(public_registry, f, tree, rest, is_leaf, mismatch)


def tree_flatten_with_path(tree: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False):
    """``([(key_path, leaf), ...], treedef)``."""
    return public_registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False
) -> list:
    """``[(key_path, leaf), ...]``."""
    return public_registry.flatten_with_path(tree, _path_predicate(is_leaf, is_leaf_takes_path))[0]


def tree_map_with_path(
    f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None, is_leaf_takes_path: bool = False
) -> Any:
    """Like ``tree_map`` but ``f(key_path, leaf, *others)``."""
    leaf = None if is_leaf_takes_path else is_leaf
    mismatch = functools.partial(_structure_error, "tree_map_with_path tree", tree, leaf)
    return map_with_path_over(public_registry, f, tree, rest, is_leaf, is_leaf_takes_path, mismatch)


def tree_reduce(f: Callable, tree: Any, initializer: Any = ..., is_leaf=None) -> Any:
    """``functools.reduce`` over the leaves: ``tree_reduce(operator.add, [1, (2, 3)]) == 6``."""
    leaves = tree_leaves(tree, is_leaf)
    return functools.reduce(f, leaves) if initializer is ... else functools.reduce(f, leaves, initializer)


def tree_all(tree: Any, *, is_leaf=None) -> bool:
    """``all`` over the leaves."""
    return all(tree_leaves(tree, is_leaf))


def treedef_tuple(treedefs) -> PyTreeDef:
    """The structure of a tuple whose children have structures ``treedefs``."""
    return _pytree.treedef_tuple(public_registry, list(treedefs))


def all_leaves(xs: Iterable[Any], is_leaf=None) -> bool:
    """Whether every item of ``xs`` is a leaf."""
    if is_leaf is None:
        return _pytree.all_leaves(public_registry, xs)
    return all(
        tree_structure(x, is_leaf).num_nodes == 1 and tree_structure(x, is_leaf).num_leaves == 1 for x in xs
    )


def broadcast_prefix(prefix_tree: Any, full_tree: Any, is_leaf=None) -> list:
    """Leaves of ``prefix_tree`` repeated to match the leaves of ``full_tree``."""
    return broadcast_prefix_over(public_registry, prefix_tree, full_tree, is_leaf)


KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the immediate children of ``treedef``.

    >>> treedef_children(tree_structure([1, (2, 3)]))
    [PyTreeDef(*), PyTreeDef((*, *))]
    """
    return treedef.children()


def is_tree_node(typ: type) -> bool:
    """Whether ``typ`` is a pytree node type (built in, a namedtuple, or registered).

    >>> is_tree_node(dict), is_tree_node(int)
    (True, False)
    """
    return public_registry.is_node(typ)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """The children of the pytree node ``tree`` (not their leaves) and its metadata; a
    ``ValueError`` for a leaf.

    >>> flatten_one_level({"a": [1, 2], "b": 3})
    (([1, 2], 3), ('a', 'b'))
    """
    out = public_registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"flatten_one_level: can't tree-flatten type {type(tree).__name__} (it is a leaf)")
    return out


def flatten_one_level_with_keys(tree: Any):
    """Like ``flatten_one_level``, with each child paired with its key.

    >>> flatten_one_level_with_keys({"a": 1})
    (((DictKey(key='a'), 1),), ('a',))
    """
    out = public_registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(
            f"flatten_one_level_with_keys: can't tree-flatten type {type(tree).__name__} (it is a leaf)"
        )
    return out


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten_with_keys(self) -> ([(key, child), ...], aux)`` and the
    class method ``cls.tree_unflatten(aux, children)`` (``tree_flatten`` is used if defined).

    >>> from funcgrad.kernel.tree_util import GetAttrKey, tree_leaves_with_path
    >>> @register_pytree_with_keys_class
    ... class Point:
    ...     def __init__(self, x, y):
    ...         self.x, self.y = x, y
    ...     def tree_flatten_with_keys(self):
    ...         return ((GetAttrKey("x"), self.x), (GetAttrKey("y"), self.y)), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children):
    ...         return cls(*children)
    >>> [keystr(p) for p, _ in tree_leaves_with_path(Point(1, 2))]
    ['.x', '.y']
    """
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)  # noqa: F405
    return cls


def register_static(cls: type) -> type:
    """Register ``cls`` as a pytree with no leaves: its instances are static (hashed into ``jit``'s
    cache key like ``static_argnums``). ``cls`` must be hashable.

    >>> import funcgrad
    >>> @register_static
    ... class Mode(str):
    ...     pass
    >>> funcgrad.jit(lambda x, m: x + 1 if m == "add" else x - 1)(1.0, Mode("add"))
    Array(2., dtype=float64, weak_type=True)
    """
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, children: obj)  # noqa: F405
    return cls


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turn a tree of structure ``outer(inner)`` into one of structure ``inner(outer)``
    (``inner_treedef=None`` infers it from the first outer leaf).

    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")  # (JAX's words)
    flat_iter = iter(flat)
    rows = [[next(flat_iter) for _ in range(inner_size)] for _ in range(outer_size)]
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, col) for col in zip(*rows)])


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` with each leaf repeated over the matching subtree of ``full_tree``.

    >>> tree_broadcast([1, 2], [(0, 0), {"a": 0}])
    [(1, 1), {'a': 2}]
    """
    try:
        leaves = _kernel_tree_util.broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError as e:  # (JAX's kind of error: a pytree structure error)
        raise ValueError(f"pytree structure error: prefix_tree is not a prefix of full_tree: {e}") from None
    return tree_structure(full_tree).unflatten(leaves)


class _Unspecified:
    pass


def tree_reduce_associative(
    operation: Callable, tree: Any, *, identity: Any = _Unspecified, is_leaf=None
) -> Any:
    """Reduce the leaves with an associative ``operation`` as a balanced binary tree (depth
    ``log n``); ``identity`` is returned for an empty tree.

    >>> import operator
    >>> tree_reduce_associative(operator.add, [1, (2, 3), {"a": 4}])
    10
    """
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _Unspecified:
            raise TypeError("tree_reduce_associative: give identity= to reduce an empty tree")
        return identity

    def reduce(seq):
        if len(seq) == 1:
            return seq[0]
        mid = len(seq) // 2
        return operation(reduce(seq[:mid]), reduce(seq[mid:]))

    return reduce(leaves)


class _HashableCallableShim:
    """Delegates ``__call__``, ``__hash__`` and ``__eq__`` to a wrapped function (so a Partial of a
    ``functools.partial`` keeps exactly its own arguments as pytree children)."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        return self.fun == (other.fun if isinstance(other, _HashableCallableShim) else other)

    def __repr__(self):
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are children (traced when
    passed through a transformation), the function is static metadata. It can be passed to and
    returned from ``jit``-compiled functions.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> add_one = Partial(fnp.add, 1.0)
    >>> funcgrad.jit(lambda f, x: f(x))(add_one, 2.0)
    Array(3., dtype=float64, weak_type=True)
    """

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):
            # functools.partial would merge a partial's arguments into this one; box it instead.
            original = func
            func = _HashableCallableShim(original)
            out = super().__new__(cls, func, *args, **kw)
            func.func, func.args, func.keywords = original.func, original.args, original.keywords
            return out
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(  # noqa: F405
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)


def _structure_error(name: str, tree, is_leaf, other, error: Exception) -> Exception:
    """What ``tree_map`` raises where ``tree`` is not a prefix of ``other`` (flattening it up to
    ``tree``'s structure raised ``error``): as jax's ``tree_map``, the "pytree structure error ...
    at key path" of the first mismatch, else ``error`` itself.

    >>> tree_map(lambda a, b: a, {"x": None}, {"x": 1.0})
    Traceback (most recent call last):
    ValueError: pytree structure error: different types at key path
        tree_map tree['x']
    At that key path, the prefix pytree tree_map tree has a subtree of type
        <class 'NoneType'>
    but at the same key path the full pytree has a subtree of different type
        <class 'float'>.
    """
    maker = next(_prefix_errors(tree, other, (), is_leaf), None)
    return error if maker is None else maker(name)


def _prefix_errors(prefix, full, path, is_leaf):
    # JAX's checks and words (jax/_src/tree_util.py's _prefix_error), one level at a time: why
    # ``prefix`` is not a prefix of ``full``, one ``ValueError`` maker per mismatch (tree_map's error,
    # jax._src.tree_util.prefix_errors under the alias).
    p_def = tree_structure(prefix, is_leaf=is_leaf)
    if p_def.num_nodes == 1 and p_def.num_leaves == 1:  # a leaf is a prefix of any tree
        return
    where = keystr(path)
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            f"pytree structure error: different types at key path\n    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix)}\n"
            f"but at the same key path the full pytree has a subtree of different type\n    {type(full)}."
        )
        return
    p_pairs, p_meta = default_registry.flatten_one_level_with_keys(prefix)
    f_pairs, f_meta = default_registry.flatten_one_level_with_keys(full)
    p_keys, f_keys = tuple(k for k, _ in p_pairs), tuple(k for k, _ in f_pairs)
    if isinstance(prefix, list | tuple):
        if len(prefix) != len(full):
            ty = type(prefix).__name__
            yield lambda name: ValueError(
                f"pytree structure error: different lengths of {ty} at key path\n    {name}{where}\n"
                f"At that key path, the prefix pytree {name} has a subtree of type {ty} of length "
                f"{len(prefix)}, but the full pytree has a subtree of the same type but of length "
                f"{len(full)}."
            )
            return
    elif len(p_pairs) != len(f_pairs):
        try:
            diff = set(p_keys).symmetric_difference(set(f_keys))
        except Exception:  # noqa: BLE001 - unhashable keys: no difference shown (JAX's too)
            diff = None

        def names(keys):
            return " ".join(str(getattr(k, "key", k)) for k in keys)

        yield lambda name: ValueError(
            f"pytree structure error: different numbers of pytree children at key path\n    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix)}\n"
            f"with {len(p_pairs)} child keys\n    {names(p_keys)}\n"
            "but at the same key path the full pytree has a subtree of the same type but with "
            f"{len(f_pairs)} child keys\n    {names(f_keys)}\n"
            + ("" if diff is None else f"so the symmetric difference on key sets is\n    {names(diff)}")
        )
        return
    if p_meta != f_meta:
        p_text, f_text = str(p_meta), str(f_meta)
        diff_text = textwrap.indent(
            "\n".join(difflib.ndiff(p_text.splitlines(), f_text.splitlines())), "    "
        )
        yield lambda name: ValueError(
            f"pytree structure error: different pytree metadata at key path\n    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n    {type(prefix)}\n"
            f"with metadata\n    {p_text}\n"
            "but at the same key path the full pytree has a subtree of the same type but with "
            f"metadata\n    {f_text}\nso the diff in the metadata at these pytree nodes is\n{diff_text}"
        )
        return
    for key, (_, p), (_, f) in zip(p_keys, p_pairs, f_pairs):
        yield from _prefix_errors(p, f, (*path, key), None)


def _prefix_error(name: str, axes, tree, detail: str) -> ValueError:
    """JAX's error for a specification (``vmap in_axes``, ``device_put device``) that is not a tree
    prefix of ``tree`` (its ``flatten_axes``: each mismatch by key path, ``None`` a leaf), then
    funcgrad's ``detail``.

    >>> print(str(_prefix_error("vmap in_axes", ([0],), (1.0,), "see the docs")).splitlines()[0])
    vmap in_axes specification must be a tree prefix of the corresponding value;
    """
    errors = list(_prefix_errors(axes, tree, (), lambda x: x is None))  # (None is a leaf, as JAX's)
    details = "".join(f"\n  {e(name).args[0]}" for e in errors)
    found = f"\n  Mismatch details ({len(errors)} found):{details}" if errors else ""
    return ValueError(
        f"{name} specification must be a tree prefix of the corresponding value; {found}\n({detail})"
    )
