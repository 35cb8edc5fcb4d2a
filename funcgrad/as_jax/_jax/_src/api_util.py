"""``jax._src.api_util`` under the alias: funcgrad's ``api_util`` (JAX's public ``jax.api_util``),
plus ``infer_argnums_and_argnames``, which e3nn-jax imports (under jax-md's neural networks) to
resolve the arguments its decorators treat specially, as ``jit`` resolves static arguments.

>>> import inspect
>>> sig = inspect.signature(lambda x, irreps, *, n=1: x)
>>> infer_argnums_and_argnames(sig, None, "irreps"), infer_argnums_and_argnames(sig, 0, None)
(((1,), ('irreps',)), ((0,), ('x',)))
>>> infer_argnums_and_argnames(sig, None, None)
((), ())
"""

import inspect
from collections.abc import Iterable

from funcgrad.api_util import *  # noqa: F403


def _as_tuple(v, kind) -> tuple:
    return (v,) if isinstance(v, kind) else tuple(v)


def infer_argnums_and_argnames(
    sig: inspect.Signature, argnums: int | Iterable[int] | None, argnames: str | Iterable[str] | None
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """JAX's: the missing one of ``argnums``/``argnames`` from the other, by the positional-or-keyword
    parameters of ``sig``; both given are returned as tuples, neither gives ``((), ())``."""
    if argnums is None and argnames is None:
        return (), ()
    if argnums is not None and argnames is not None:
        return _as_tuple(argnums, int), _as_tuple(argnames, str)
    params = [
        (i, k)
        for i, (k, p) in enumerate(sig.parameters.items())
        if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    if argnums is None:
        argnames = _as_tuple(argnames, str)
        return tuple(i for i, k in params if k in argnames), argnames
    argnums = _as_tuple(argnums, int)
    return argnums, tuple(k for i, k in params if i in argnums)
