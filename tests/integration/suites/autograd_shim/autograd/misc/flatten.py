"""autograd.misc.flatten: a pytree of numbers as one float vector, and the inverse (funcgrad's
``ravel_pytree``; autograd keeps Python scalars and tuples/lists/dicts as they were)."""

from funcgrad.flatten_util import ravel_pytree


def flatten(value):
    """``(vector, unflatten)`` for a pytree of arrays and scalars.

    >>> v, unflatten = flatten((1.0, [2.0, 3.0]))
    >>> v.tolist(), unflatten(v)
    ([1.0, 2.0, 3.0], (1.0, [2.0, 3.0]))
    """
    return ravel_pytree(value)


def flatten_func(func, example):
    """``(flat_func, unflatten, flat_example)``: ``func`` of a pytree as a function of one vector."""
    flat_example, unflatten = ravel_pytree(example)

    def flat_func(x, *args, **kwargs):
        return ravel_pytree(func(unflatten(x), *args, **kwargs))[0]

    return flat_func, unflatten, flat_example
