"""Simplifying a jaxpr that will be interpreted many times: constant folding, multiplication by
one, reshapes of reshapes and broadcasts of broadcasts, common subexpressions, dead code.

Layer: kernel. Imports ``core``, ``ir``, ``jaxpr_keys`` and ``partial_eval``.

Derivative programs repeat themselves: the transpose of ``grad(grad(f))`` recomputes the same
``square b`` in every branch and multiplies by the cotangent seed ``1.0``. XLA removes all of that
when it compiles; a program interpreted equation by equation (the cached programs of eager
``grad``, NOTE: [eager grad program cache]) pays for every copy on every call. Each rewrite here is
exact in IEEE arithmetic (``x * 1.0`` is ``x`` for every ``x``, nan and -0.0 included; ``x + 0.0``
is not, so it stays).
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel.ir import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    has_effects,
)
from funcgrad.kernel.jaxpr_keys import literal_key, params_key
from funcgrad.kernel.partial_eval import dce_jaxpr_consts


def equation_key(primitive, params: dict, ins) -> tuple:
    """What makes two equations compute the same values: the primitive, the parameters (compared
    by ``params_key``) and the inputs (variables by identity, literals by value and aval).
    Raises ``TypeError`` for an unhashable parameter."""
    return (primitive, params_key(params), *[a if type(a) is Var else literal_key(a) for a in ins])


def _is(a, value) -> bool:
    if type(a) is not Literal:
        return False
    try:
        return bool(np.asarray(a.val) == value)
    except (TypeError, ValueError):
        return False


# NOTE: [folded arrays]
# Derivative programs build arrays that depend on no input: the masks of ``tril``/``triu``/``eye``
# (two iotas, a comparison, a select against a broadcast zero) in the rules of cholesky, eigh or
# triangular solves, the broadcast scalars that ``select_n`` picks from. A cached eager program
# would rebuild them on every call (the eager GP value-and-gradient at n=500: five 500x500 masks
# and zero arrays a call). ``simplify`` computes each such equation once, when its operands are
# literals or values folded before it, and keeps the value as a constant of the program: a
# broadcast stays a broadcast view (no memory, NumPy reads it with stride 0), any other result is
# kept up to ``_FOLD_LIMIT`` bytes, ``_FOLD_BUDGET`` in all per program (the cache holds them).
# Operand-free equations fold too (``iota``); effects, nested programs and several results never.
_FOLD_LIMIT = 8 << 20
_FOLD_BUDGET = 32 << 20


def _fold_array(prim, params, ins, out, folded: dict, budget: list) -> bool:
    """Fold ``out = prim(*ins)`` into ``folded`` when every operand is known (NOTE: [folded
    arrays]); False when it stays an equation."""
    if not out.aval.shape or prim.impl is None or prim.impl_takes_arrays:
        return False
    if any(not (type(a) is Literal or a in folded) for a in ins):
        return False
    vals = [a.val if type(a) is Literal else folded[a] for a in ins]
    try:
        if prim.traits.places_operand and vals and np.ndim(vals[0]) == 0:
            value = np.broadcast_to(np.asarray(vals[0], out.aval.dtype), out.aval.shape)
        else:
            nbytes = out.aval.size * np.dtype(out.aval.dtype).itemsize
            if nbytes > min(_FOLD_LIMIT, budget[0]):
                return False
            with core.set_current_trace(core.EvalTrace(None)):
                value = np.asarray(core.concrete_value(prim.bind(*vals, **params)))
            budget[0] -= nbytes
    except Exception:  # noqa: BLE001 - leave anything unusual to run at run time
        return False
    if value.shape != out.aval.shape or value.dtype != out.aval.dtype:
        return False
    if value.flags.writeable:  # shared by every call of the program (and maybe its output)
        value = value.copy() if value.base is not None else value
        value.flags.writeable = False
    folded[out] = value
    return True


def simplify(closed: ClosedJaxpr, known: dict | None = None) -> ClosedJaxpr:
    """``closed`` with constant 0-d equations folded, ``p(x, e)`` replaced by ``x`` where ``e`` is
    ``p``'s ``identity_element`` (and the result's type is ``x``'s), a reshape of a reshape (a
    broadcast of a broadcast) made one from the original -- none at all when the shape comes back
    --, repeated equations computed once, and dead equations dropped. ``known`` maps
    ``equation_key``s to variables already holding those equations' results
    (``recording.given_forward_values``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> cj = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 1.0 + fnp.sin(x))(1.0)
    >>> len(cj.jaxpr.eqns), len(simplify(cj).jaxpr.eqns)
    (4, 2)
    """
    jaxpr = closed.jaxpr
    env: dict[Var, object] = {}  # a var -> the atom that replaces it
    folded: dict[Var, np.ndarray] = {}  # a var -> its value, computed here (NOTE: [folded arrays])
    budget = [_FOLD_BUDGET]
    seen: dict = dict(known) if known else {}
    eqns: list[JaxprEqn] = []
    producers: dict[Var, JaxprEqn] = {}  # a var -> the kept equation that computes it

    def read(a):
        return env.get(a, a) if type(a) is Var else a

    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        ins = [read(a) for a in eqn.invars]
        single = not prim.multiple_results
        if single and not prim.traits.has_side_effects and not prim.traits.jaxpr_params:
            out = eqn.outvars[0]
            # A reshape or broadcast of the result of another: one equation from the original.
            source = producers.get(ins[0]) if ins and type(ins[0]) is Var else None
            if (
                prim.traits.reshapes_operand
                and source is not None
                and source.primitive.traits.reshapes_operand
            ):
                ins = [source.invars[0]]
            elif prim.traits.places_operand and source is not None and source.primitive.traits.places_operand:
                inner = source.params["broadcast_dimensions"]
                outer = eqn.params["broadcast_dimensions"]
                params = {**eqn.params, "broadcast_dimensions": tuple(outer[d] for d in inner)}
                eqn = JaxprEqn(prim, [source.invars[0]], params, eqn.outvars, eqn.source_info)
                ins = [source.invars[0]]
            if (
                (prim.traits.reshapes_operand or prim.traits.places_operand)
                and type(ins[0]) is Var
                and ins[0].aval == out.aval
            ):
                env[out] = ins[0]  # the same shape: the operand itself
                continue
            # Constant folding of a 0-d result from literals.
            if ins and all(type(a) is Literal for a in ins) and out.aval.shape == () and prim.impl:
                try:
                    with core.set_current_trace(core.EvalTrace(None)):
                        val = prim.bind(*[a.val for a in ins], **eqn.params)
                    env[out] = Literal(core.concrete_value(val)[()], out.aval)
                    continue
                except Exception:  # noqa: BLE001 - leave anything unusual to run at run time
                    pass
            if _fold_array(prim, eqn.params, ins, out, folded, budget):
                continue
            unit = prim.traits.identity_element
            if unit is not None and len(ins) == 2:
                for keep, other in ((ins[0], ins[1]), (ins[1], ins[0])):
                    if _is(other, unit) and type(keep) is Var and keep.aval == out.aval:
                        env[out] = keep
                        break
                if out in env:
                    continue
        key = None
        if not has_effects(eqn):
            try:
                key = equation_key(prim, eqn.params, ins)
            except TypeError:
                key = None
        if key is not None:
            prev = seen.get(key)
            if prev is not None and all(p.aval == o.aval for p, o in zip(prev, eqn.outvars)):
                env.update(zip(eqn.outvars, prev))
                continue
            seen[key] = eqn.outvars
        eqns.append(new := JaxprEqn(prim, ins, eqn.params, eqn.outvars, eqn.source_info))
        if single:
            producers[eqn.outvars[0]] = new
    outvars = [read(a) for a in jaxpr.outvars]
    # Outputs stay variables (every consumer of a jaxpr expects them to): a folded output becomes
    # a constant.
    constvars, consts = [*jaxpr.constvars, *folded], [*closed.consts, *folded.values()]
    for i, a in enumerate(outvars):
        if type(a) is Literal:
            v = Var(a.aval)
            constvars.append(v)
            consts.append(np.asarray(a.val, a.aval.dtype))
            outvars[i] = v
    new, consts = dce_jaxpr_consts(Jaxpr(constvars, jaxpr.invars, eqns, outvars), consts)
    return ClosedJaxpr(new, consts)
