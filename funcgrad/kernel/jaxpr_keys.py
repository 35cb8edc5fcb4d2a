"""Equations and jaxprs compared by value: hashable keys that tell apart what Python's ``==``
conflates (``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``) and compare jaxprs by structure.

Layer: kernel. Imports only numpy, ``funcgrad.kernel.ir`` (the IR's classes) and
``funcgrad.kernel.caches`` (the memo of ``jaxpr_key`` is a registered cache).

The keys behind common-subexpression elimination (``simplify``), surface templates, custom
derivatives' non-differentiable arguments and the eager recording's program cache (NOTE: [eager
grad program cache]): one notion of "the same equation", written once.
"""

from __future__ import annotations

import weakref

import numpy as np

from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, Var


def params_key(params: dict) -> tuple:
    """A hashable key of an equation's parameters that tells apart what Python's ``==`` conflates:
    ``1``, ``1.0`` and ``True`` differ, and so do ``0.0`` and ``-0.0``. Jaxprs compare by
    structure (``jaxpr_key``); functions and other objects without their own ``==`` by identity
    (held weakly). Raises ``TypeError`` for an unhashable value (an array).

    >>> params_key({"axes": (0,), "y": 2}) == params_key({"axes": (0,), "y": 2.0})
    False
    """
    if not params:
        return ()
    return tuple([(k, _freeze(v)) for k, v in params.items()])


def _freeze(v):
    t = type(v)
    if t is float:
        return (float, v.hex())
    if t is int or t is bool or t is str or v is None:
        return (t, v)
    if t is tuple or t is list:
        for x in v:
            if type(x) is not int:
                return (t, *[_freeze(x) for x in v])
        return (t, v)  # (ints only, the common case: axes, shapes; never equal to the form above)
    if t is complex:
        return (complex, v.real.hex(), v.imag.hex())
    if t is dict:
        return (dict, *[(k, _freeze(x)) for k, x in sorted(v.items())])
    if isinstance(v, np.generic):
        return (t, _freeze(v.item()))
    if t is ClosedJaxpr or t is Jaxpr:
        return jaxpr_key(v)
    if t.__eq__ is object.__eq__:
        # Compared by identity (functions, other objects): a weak reference, so a key does not
        # keep a program's constants alive; a dead reference equals no live one, so an identity
        # reused by a new object never matches an old key.
        try:
            return weakref.ref(v)
        except TypeError:
            pass
    hash(v)  # (TypeError for an unhashable value)
    return (t, v)


def jaxpr_key(jaxpr: Jaxpr | ClosedJaxpr) -> tuple:
    """A structural key of a jaxpr: equal for two jaxprs with the same equations (primitives,
    ``params_key``s, wiring, avals, literals by exact value) and, when closed, the same constants:
    small ones by exact value, large ones by identity (held weakly: a constant is part of the
    program, and comparing a large one's value would cost as much as using it).
    Memoised per jaxpr object. Raises ``TypeError`` where a parameter or constant cannot be keyed.

    The program of ``checkpoint(f)``, ``cond`` or ``scan`` is traced anew on every eager call; by
    structure, the recording of an eager ``grad`` still finds it again (NOTE: [eager grad program
    cache]).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> a = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)
    >>> b = funcgrad.make_jaxpr(lambda y: fnp.sin(y) * 2.0)(3.0)
    >>> c = funcgrad.make_jaxpr(lambda y: fnp.sin(y) * -2.0)(3.0)
    >>> jaxpr_key(a) == jaxpr_key(b), jaxpr_key(a) == jaxpr_key(c)
    (True, False)
    """
    hit = _jaxpr_keys.get(id(jaxpr))
    if hit is not None and hit[0]() is jaxpr:
        return hit[1]
    if type(jaxpr) is ClosedJaxpr:
        key = (ClosedJaxpr, jaxpr_key(jaxpr.jaxpr), *[_const_key(c) for c in jaxpr.consts])
    else:
        numbers: dict[Var, int] = {}

        def atom(a):
            return numbers[a] if type(a) is Var else literal_key(a)

        parts: list = [Jaxpr, len(jaxpr.constvars)]
        for v in (*jaxpr.constvars, *jaxpr.invars):
            numbers[v] = len(numbers)
            parts.append(_aval_key(v.aval))
        for eqn in jaxpr.eqns:
            ins = tuple([atom(a) for a in eqn.invars])
            for v in eqn.outvars:
                numbers[v] = len(numbers)
            outs = tuple([_aval_key(v.aval) for v in eqn.outvars])
            info = eqn.source_info
            if info is not None and info.xla_metadata:  # (NOTE: [xla metadata]: part of the program)
                outs = (*outs, info.xla_metadata)
            parts.append((eqn.primitive, params_key(eqn.params), ins, outs))
        parts.append(tuple([atom(a) for a in jaxpr.outvars]))
        key = tuple(parts)
    if len(_jaxpr_keys) >= 1024:
        _jaxpr_keys.clear()
    _jaxpr_keys[id(jaxpr)] = (weakref.ref(jaxpr), key)
    return key


_jaxpr_keys: dict = register_cache("kernel.jaxpr_keys", {})  # NOTE: [caches have an owner]


def literal_key(a: Literal) -> tuple:
    """A literal's part of a key: its exact value (as ``params_key`` compares values) and aval."""
    v = a.val
    if isinstance(v, np.ndarray | np.generic):
        v = v.item()
    return ("literal", _freeze(v), _aval_key(a.aval))


def _aval_key(aval) -> tuple:
    return (
        type(aval),
        getattr(aval, "shape", None),
        getattr(aval, "dtype", None),
        getattr(aval, "weak_type", False),
    )


def _const_key(c):
    if type(c) in (bool, int, float, complex) or isinstance(c, np.generic):
        return _freeze(c)
    size = getattr(c, "size", None)
    if type(size) is int and size <= _CONSTANT_BY_VALUE:
        # Small constants are keyed by their exact bytes: staging copies a captured array, so a
        # branch's ``1.0 - x`` or a scale array is a new object every time it is traced.
        value = np.asarray(c)
        return ("value", type(c), value.dtype, value.shape, value.tobytes())
    return _HeldWeakly(c)  # (TypeError for a constant that cannot be held weakly)


_CONSTANT_BY_VALUE = 4096  # elements


class _HeldWeakly:
    """A key part equal only to one for the same live object, held weakly (an array's own ``==``
    and ``hash`` are elementwise or missing, so a plain weak reference cannot be the key)."""

    __slots__ = ("ref", "ident")

    def __init__(self, obj):
        self.ref = weakref.ref(obj)
        self.ident = id(obj)

    def __hash__(self):
        return self.ident

    def __eq__(self, other):
        if type(other) is not _HeldWeakly:
            return NotImplemented
        obj = self.ref()
        return obj is not None and obj is other.ref()
