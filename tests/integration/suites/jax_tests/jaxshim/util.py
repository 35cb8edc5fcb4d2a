"""``jax._src.util`` for JAX's test files: the alias's helpers plus ``tuple_update`` and friends."""

from funcgrad.as_jax._jax._src.util import *  # noqa: F403
from funcgrad.as_jax._jax._src.util import safe_map, safe_zip, split_list, unzip2, unzip3  # noqa: F401


def tuple_update(t, idx, val):
    """``t`` with item ``idx`` replaced by ``val``."""
    return t[:idx] + (val,) + t[idx + 1 :]


def tuple_insert(t, idx, val):
    return t[:idx] + (val,) + t[idx:]


def tuple_delete(t, idx):
    return t[:idx] + t[idx + 1 :]


def prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def canonicalize_axis(axis, num_dims):
    if not -num_dims <= axis < num_dims:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {num_dims}")
    return axis % num_dims if num_dims else axis


def subvals(lst, replace):
    """``lst`` as a tuple with ``lst[i] = v`` for each ``(i, v)`` in ``replace``."""
    lst = list(lst)
    for i, v in replace:
        lst[i] = v
    return tuple(lst)


def cache(max_size=4096, trace_context_in_key=True):
    """JAX's ``util.cache(...)``: a decorator factory of an LRU cache (``functools.lru_cache``)."""
    import functools

    del trace_context_in_key
    return functools.lru_cache(maxsize=max_size)
