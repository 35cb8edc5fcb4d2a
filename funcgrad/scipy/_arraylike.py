"""``refuse_as_attribute``: JAX's error for a list where its ``funcgrad.scipy`` counterpart reads an
array attribute of the argument first.

Layer: surface. Imports nothing of funcgrad.

Most of JAX's scipy functions refuse a list or tuple through ``check_arraylike`` (a TypeError in its
words: ``funcgrad.numpy._core.check_arraylike``); a few read ``x.ndim``, ``x.conj()`` or
``x.astype`` of the argument before anything converts it, so a list is Python's AttributeError
there (``jax.scipy.signal.convolve([1.0], [1.0])``). A program that runs on jax never passes one,
and one that does fails the same way here.
"""

from __future__ import annotations


def refuse_as_attribute(attr: str, *args) -> None:
    """The AttributeError JAX's function raises reading ``attr`` of a list or tuple argument.

    >>> refuse_as_attribute("ndim", [1.0])
    Traceback (most recent call last):
    AttributeError: 'list' object has no attribute 'ndim'
    """
    for a in args:
        if isinstance(a, list | tuple):
            raise AttributeError(f"'{type(a).__name__}' object has no attribute '{attr}'")
