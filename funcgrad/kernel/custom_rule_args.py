"""The boundary between a user's custom derivative rule and the kernel: what a rule receives
and returns in place of the kernel's ``Zero`` (``SymbolicZero``, ``CustomVJPPrimal``; NOTE:
[symbolic zeros in custom rules] in custom_derivatives.py), and a call's arguments resolved to
positions (defaults filled in, as JAX binds them) and split into the differentiable and the
``nondiff_argnums`` ones.

Layer: kernel, under ``custom_derivatives.py`` (which re-exports ``SymbolicZero``,
``CustomVJPPrimal`` and ``custom_vjp_primal_tree_values``). Imports only the kernel (``ad``,
``core``, pytrees).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Sequence
from typing import Any

from funcgrad.kernel import ad, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ad import Zero


class SymbolicZero:
    """A tangent or cotangent known to be zero, given to a rule defined with
    ``symbolic_zeros=True`` in place of an array (NOTE: [symbolic zeros in custom rules]). It has the
    ``aval`` (``shape``, ``dtype``) of the array it stands for, not its arithmetic; ``instantiate()``
    makes the array. A rule may return one for an output tangent that is zero.

    >>> import numpy as np
    >>> z = SymbolicZero.from_primal_value(np.ones(3, np.float32))
    >>> z, z.shape, z.instantiate().tolist()
    (SymbolicZero(f32[3]), (3,), [0.0, 0.0, 0.0])
    """

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)

    @staticmethod
    def from_primal_value(x) -> SymbolicZero:
        """The symbolic zero tangent of the primal value ``x``."""
        return SymbolicZero(ad.tangent_aval(core.get_aval(x)))

    def instantiate(self):
        """The zeros this stands for, as an array."""
        return ad.instantiate(Zero(self.aval))

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


@dataclasses.dataclass(frozen=True, slots=True)
class CustomVJPPrimal:
    """A differentiable argument leaf as a ``custom_vjp`` ``fwd`` defined with
    ``symbolic_zeros=True`` receives it: its ``value`` and whether it is ``perturbed`` (being
    differentiated); an unperturbed leaf's cotangent is not needed. (A dataclass, not a pytree
    node: it is a leaf of the argument trees, as in JAX.)

    >>> CustomVJPPrimal(1.0, False).perturbed
    False
    """

    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """The values of a tree of ``CustomVJPPrimal`` leaves (what ``fwd`` would get without
    ``symbolic_zeros``).

    >>> custom_vjp_primal_tree_values({"a": CustomVJPPrimal(1.0, True)})
    {'a': 1.0}
    """
    return tu.tree_map(lambda leaf: leaf.value, tree)


def _zero_to_user(t, symbolic: bool):
    """A tangent as a rule sees it: the kernel's ``Zero`` becomes a ``SymbolicZero`` or zeros."""
    if type(t) is Zero:
        return SymbolicZero(t.aval) if symbolic else ad.instantiate(t)
    return t


def _zero_from_user(t):
    return Zero(t.aval) if type(t) is SymbolicZero else t


def _defaults_signature(fun):
    """``fun``'s signature when calls must be bound to it (keyword arguments or defaults), else
    ``None``: JAX maps a call to positional arguments with ``inspect.signature``."""
    if isinstance(fun, functools.partial):
        return None  # (opaque, as JAX's: its bound keywords are the partial's business)
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):  # (a callable without a signature: positional calls only)
        return None
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    if any(p.default is not p.empty or p.kind in kinds for p in sig.parameters.values()):
        return sig
    return None


def _resolve_args(custom, args, kwargs):
    """The call's arguments as positional ones, defaults filled in (the rules receive them all).

    >>> from funcgrad.kernel.custom_derivatives import custom_jvp
    >>> f = custom_jvp(lambda x, y=2.0: x * y)
    >>> _resolve_args(f, (1.0,), {}), _resolve_args(f, (1.0,), {"y": 3.0})
    ((1.0, 2.0), (1.0, 3.0))
    """
    sig = custom._signature
    if sig is None:
        if kwargs:
            sig = inspect.signature(custom.fun)  # (its error names the unexpected keyword)
        else:
            return args
    name = getattr(custom.fun, "__name__", "custom function")
    try:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        passed = [k for k in bound.kwargs if k in kwargs]  # (a keyword-only default stays the function's)
        if passed:
            raise TypeError(
                f"The following keyword arguments could not be resolved to positions: {', '.join(passed)} "
                "(a custom_jvp/custom_vjp function is called with positional arguments)"
            )
    except TypeError as e:  # (JAX's wording)
        raise TypeError(
            f"The input arguments to the {type(custom).__name__}-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    return bound.args


def _nondiff_positions(fun, nondiff_argnums, nondiff_argnames) -> tuple[int, ...]:
    """``nondiff_argnums`` with the positions of the ``nondiff_argnames`` added (JAX's
    ``nondiff_argnames``: parameters named in ``fun``'s signature), sorted.

    >>> _nondiff_positions(lambda f, x, n: x, (0,), ("n",))
    (0, 2)
    """
    positions = set(nondiff_argnums)
    if nondiff_argnames:
        params = list(inspect.signature(fun).parameters)
        for name in nondiff_argnames:
            if name not in params:
                raise ValueError(f"nondiff_argnames: {fun} has no parameter named {name!r}")
            positions.add(params.index(name))
    return tuple(sorted(positions))


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    dyn = tuple(a for i, a in enumerate(args) if i not in nondiff)
    return nondiff, dyn


def _merge(nondiff: dict, dyn: Sequence, n: int):
    it = iter(dyn)
    return [nondiff[i] if i in nondiff else next(it) for i in range(n)]
