"""Interpreting a jaxpr: ``eval_jaxpr`` binds each equation's primitive in order.

Layer: kernel (bottom). Imports numpy and the kernel modules ``array``, ``ir``, ``source_info`` and
``values``; a primitive is bound through its own ``bind`` (``kernel.core``), which re-exports these
names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from funcgrad.kernel.array import Array
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, Var
from funcgrad.kernel.source_info import source_info_config
from funcgrad.kernel.values import _PYTHON_SCALARS


def bind_equation(primitive, args, params):
    """The default of ``eval_jaxpr``'s ``bind``: bind on the current trace."""
    return primitive.bind(*args, **params)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args, bind=bind_equation) -> list[Any]:
    """Interpret ``jaxpr``: ``bind(primitive, inputs, params)`` for each equation, in order.

    The default binds each primitive on the current trace, so evaluating a jaxpr under a
    transformation transforms it. Equations staged meanwhile inherit the source line of the
    equation being interpreted (NOTE: [source info of re-interpreted equations]). Other
    interpreters pass their own ``bind`` (the eager control-flow loops call the NumPy impls).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> cj = funcgrad.make_jaxpr(fnp.sin)(1.0)
    >>> float(eval_jaxpr(cj.jaxpr, cj.consts, 0.0)[0])
    0.0
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    config = source_info_config
    prev = config.override
    try:
        for eqn in jaxpr.eqns:
            config.override = eqn.source_info or prev
            ins = [literal_value(a) if type(a) is Literal else env[a] for a in eqn.invars]
            outs = bind(eqn.primitive, ins, eqn.params)
            if eqn.primitive.multiple_results:
                env.update(zip(eqn.outvars, outs))
            else:
                env[eqn.outvars[0]] = outs
    finally:
        config.override = prev
    return [literal_value(a) if type(a) is Literal else env[a] for a in jaxpr.outvars]


def literal_value(a: Literal):
    """The value a literal stands for when a jaxpr is interpreted: weakly typed literals become
    weak 0-d Arrays, so interpreting a staged program gives the weak types that staging gave
    (``grad`` of a weak input has weak gradients, as in JAX)."""
    if a.aval.weak_type and type(a.val) not in _PYTHON_SCALARS:
        return Array._from_owned(np.asarray(a.val, a.aval.dtype), True)
    return a.val


def eval_closed(closed: ClosedJaxpr, *args, bind=bind_equation) -> list[Any]:
    """``eval_jaxpr`` of a closed jaxpr."""
    return eval_jaxpr(closed.jaxpr, closed.consts, *args, bind=bind)
