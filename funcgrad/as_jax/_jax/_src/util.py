"""``jax._src.util`` under the alias: the small list helpers that JAX's tutorials and libraries
import from it (``safe_map``, ``safe_zip``, ``unzip2``, ...), with JAX's meaning: the ``safe``
variants insist that their sequences have equal lengths.

>>> safe_map(lambda a, b: a + b, [1, 2], [10, 20])
[11, 22]
>>> unzip2([(1, "a"), (2, "b")])
((1, 2), ('a', 'b'))
"""

from __future__ import annotations

import functools


def safe_zip(*args):
    """``zip`` that raises if the sequences differ in length."""
    return list(zip(*args, strict=True))


def safe_map(f, *args):
    """``map`` to a list that raises if the sequences differ in length."""
    return [f(*xs) for xs in zip(*args, strict=True)]


def _unzip(n, xs):
    columns = tuple([] for _ in range(n))
    for x in xs:
        for column, item in zip(columns, x, strict=True):
            column.append(item)
    return tuple(tuple(c) for c in columns)


def unzip2(xys):
    """``[(x, y), ...]`` -> ``((x, ...), (y, ...))``."""
    return _unzip(2, xys)


def unzip3(xyzs):
    """``[(x, y, z), ...]`` -> three tuples."""
    return _unzip(3, xyzs)


def split_list(args, ns):
    """``args`` cut into pieces of lengths ``ns`` and the rest."""
    args, out = list(args), []
    for n in ns:
        out.append(args[:n])
        args = args[n:]
    return [*out, args]


def partition_list(bs, lst):
    """The items of ``lst`` where ``bs`` is false, and where it is true."""
    falses, trues = [], []
    for b, x in zip(bs, lst, strict=True):
        (trues if b else falses).append(x)
    return falses, trues


def merge_lists(bs, falses, trues):
    """The inverse of ``partition_list``."""
    falses, trues = iter(falses), iter(trues)
    return [next(trues) if b else next(falses) for b in bs]


def split_merge(predicate, xs):
    """``partition_list`` by a predicate, and the function that merges the two parts back."""
    bs = [bool(predicate(x)) for x in xs]
    falses, trues = partition_list(bs, xs)
    return trues, falses, functools.partial(_merge_by, bs)


def _merge_by(bs, trues, falses):
    return merge_lists(bs, falses, trues)


def concatenate(xs):
    """The items of a sequence of sequences, in one list."""
    return [x for seq in xs for x in seq]


def curry(f):
    """``curry(f)(a)(b)`` is ``f(a, b)``."""
    return functools.partial(functools.partial, f)


def prod(xs):
    """The product of the items of ``xs`` (1 for none)."""
    out = 1
    for x in xs:
        out *= x
    return out


def tuple_insert(t, idx, val):
    return (*t[:idx], val, *t[idx:])


def tuple_delete(t, idx):
    return (*t[:idx], *t[idx + 1 :])


cache = functools.cache
memoize = functools.cache
weakref_lru_cache = functools.lru_cache
