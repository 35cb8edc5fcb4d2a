"""``fwd_and_bwd``: a function's forward pass (returning its residuals) and backward pass as two
functions, each compiled once (JAX's ``jax.fwd_and_bwd``).

Layer: surface. Imports ``funcgrad.api`` (``vjp``, ``jit``).

The residuals are ``vjp``'s backward function, a pytree (``funcgrad.api`` registers it): its
leaves are the values the backward pass keeps, its structure the linear program (so a jitted
forward pass can return it and a jitted backward pass can take it, compiled once for all calls
with the same structure).

>>> import numpy as np, funcgrad, funcgrad.numpy as fnp
>>> fwd, bwd = fwd_and_bwd(lambda x, w: fnp.tanh(x @ w), argnums=1)
>>> y, res = fwd(np.ones((2, 3)), np.zeros((3, 4)))
>>> bwd(res, np.ones((2, 4))).tolist()[0]
[2.0, 2.0, 2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from funcgrad.api import jit, vjp

__all__ = ["fwd_and_bwd"]


def fwd_and_bwd(
    fun: Callable, argnums: int | Sequence[int], has_aux: bool = False, jitted: bool = True
) -> tuple[Callable, Callable]:
    """``(fwd, bwd)``: ``fwd(*args)`` returns ``(fun(*args), residuals)`` (and ``aux`` third with
    ``has_aux``), ``bwd(residuals, cotangent)`` the cotangents of the arguments ``argnums``
    names (one value for an int, a tuple for a sequence). With ``jitted`` (the default) both are
    ``jit``-compiled, so a training loop compiles each once instead of re-tracing a ``vjp``.
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def fwd(*args):
        for i in nums:
            if not -len(args) <= i < len(args):
                raise ValueError(f"fwd_and_bwd: argnums {argnums} is out of range for {len(args)} arguments")
        picked = [i % len(args) for i in nums]

        def partial(*dyn):
            full = list(args)
            for i, d in zip(picked, dyn):
                full[i] = d
            return fun(*full)

        return vjp(partial, *[args[i] for i in picked], has_aux=has_aux)

    def bwd(residuals, cotangent):
        grads = residuals(cotangent)
        return grads[0] if single else tuple(grads)

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
