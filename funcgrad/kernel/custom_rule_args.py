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

import numpy as np  # noqa: F401 - the examples use it

from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
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


# ``jax_disable_bwd_checks`` (JAX's flag, set by ``funcgrad._config``): a custom_vjp ``bwd``'s
# cotangents are taken as they come, their shapes unchecked, as JAX's do under it.
bwd_checks = {"disabled": False}


def set_bwd_checks_disabled(disabled: bool) -> None:
    bwd_checks["disabled"] = bool(disabled)


# ``jax_softmax_custom_jvp`` (JAX's flag, default False, set by ``funcgrad._config``): nn.softmax
# is differentiated through its formula, as JAX's; True: through its custom rule.
softmax_rule = {"custom_jvp": False}


def set_softmax_custom_jvp(value: bool) -> None:
    softmax_rule["custom_jvp"] = bool(value)


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


# ----------------------------------------------------------------------------------------------
# What a rule returns, checked in JAX's words (code written for JAX matches on them)


def _long(aval) -> str:
    """An aval as JAX's error messages print it (``float32[3]``: long dtype, no weak type)."""
    return aval.str_short(short_dtypes=False)


def _typematch(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def check_primal_out(kind: str, rule_name: str, name: str, tree, leaves, want_tree, want_avals) -> None:
    """Raise JAX's TypeError when a rule's primal output (``tree``, ``leaves``) differs from the
    custom function's (``want_tree``, ``want_avals``; ``None`` when it was not traced) in structure
    or shapes/dtypes. ``kind`` is ``"JVP"`` or ``"VJP fwd"``.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> a, pair = ShapedArray((), np.float32), tu.tree_structure((0, 0))
    >>> try:
    ...     check_primal_out("JVP", "f_jvp", "f", pair, [np.float32(1)] * 2, tu.tree_structure(0), [a])
    ... except TypeError as e:
    ...     print(str(e).splitlines()[-3:])
    ['    (float32[], float32[])', 'while ... structure:', '    float32[].']
    """
    if want_tree is None:
        return
    avals = [core.get_aval(x) for x in leaves]
    if tree == want_tree and (want_avals is None or all(map(_typematch, avals, want_avals))):
        return
    deco, word = ("custom_jvp", "JVP") if kind == "JVP" else ("custom_vjp", "fwd")
    got = str(tu.tree_unflatten(tree, [_long(a) for a in avals])).replace("'", "")
    if want_avals is None:
        want_avals = avals if tree != want_tree else want_avals
    want = str(tu.tree_unflatten(want_tree, [_long(a) for a in want_avals])).replace("'", "")
    if kind == "JVP":
        head = (
            f"Custom JVP rule {rule_name} for function {name} must produce a pair (list or tuple of "
            "length two) where the first element represents the primal output (equal in value to the "
            f"output of the custom_jvp-decorated function {name}, and in particular "
        )
        what = (
            "of the same container/pytree structure), "
            if tree != want_tree
            else "with leaves of the same shape/dtype), "
        )
    else:
        head = (
            f"Custom VJP fwd rule {rule_name} for function {name} must produce a pair (list or tuple "
            "of length two) where the first element represents the primal output (equal to the output "
            f"of the custom_vjp-decorated function {name}) and the second element represents "
            "residuals (i.e. values stored from the forward pass for use on the backward pass), "
        )
        what = ""
    if tree != want_tree:
        raise TypeError(
            f"{head}{what}but instead the {word} rule output's first element had "
            f"container/pytree structure:\n    {got}\nwhile the {deco}-decorated function {name} had "
            f"output container/pytree structure:\n    {want}."
        )
    tail = ""
    if kind != "JVP":  # (and the words of JAX's default custom_vjp, jax_custom_vjp3)
        paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tu.tree_unflatten(tree, avals))]
        path, a, w = next((p, a, w) for p, a, w in zip(paths, avals, want_avals) if not _typematch(a, w))
        tail = (
            f"\nat {path}, got fwd output type {_long(a)} which doesn't match primal output type {_long(w)}"
        )
    raise TypeError(
        f"{head}{what}but instead the {word} rule output's first element had "
        f"shapes/dtypes of:\n    {got}\nwhile the {deco}-decorated function {name} had output "
        f"shapes/dtypes of:\n    {want}{tail}"
    )


def check_tangents_out(primal_avals, tangents) -> None:
    """Raise JAX's TypeError when a JVP rule's output tangents do not have their primals' tangent
    types (shape, and dtype for inexact outputs; an integer output's tangent may be float0 or zeros
    of any type)."""
    bad = []
    for p, t in zip(primal_avals, tangents):
        want = ad.tangent_aval(p)
        got = t.aval if type(t) is Zero else core.get_aval(t)
        if got.shape != want.shape or (_dt.is_inexact(want.dtype) and got.dtype != want.dtype):
            bad.append((p, want, got))
    if not bad:
        return
    if len(primal_avals) == 1:
        p, want, got = bad[0]
        raise TypeError(
            "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
            f"dtypes. Expected {_long(want)} (tangent type of {_long(p)}) but got {_long(got)}."
        )
    lines = "\n".join(
        f"  primal {_long(p)} with tangent {_long(got)}, expecting tangent {_long(want)}"
        for p, want, got in bad
    )
    raise TypeError(
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes, "
        f"but got:\n{lines}"
    )


def bwd_cotangents(cts, dyn, in_avals) -> list:
    """A ``bwd`` rule's result as one cotangent (or ``Zero``) per differentiable argument leaf,
    checked as JAX checks it. ``dyn`` has the differentiable arguments' structure; ``None``
    stands for zeros of the whole subtree where it is, and a list of the right length is a tuple.

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> bwd_cotangents((None, 2.0), (0, 0), [ShapedArray((), np.float32)] * 2)
    [Zero(float32[]), 2.0]
    """
    if isinstance(cts, list) and len(cts) == len(dyn):
        cts = tuple(cts)
    leaves = None
    if isinstance(cts, tuple) and len(cts) == len(dyn):
        leaves = []
        for c, d in zip(cts, dyn):
            c_leaves, c_tree = tu.tree_flatten(c, lambda x: x is None)
            try:
                subtrees = c_tree.flatten_up_to(d)
            except ValueError:
                leaves = None
                break
            for leaf, sub in zip(c_leaves, subtrees):
                n = len(tu.tree_leaves(sub))
                if leaf is None:
                    leaves.extend([None] * n)
                elif n == 1:  # a leaf, or a node around one leaf (as JAX: flax's Variables)
                    leaves.append(leaf)
                else:  # one value for a subtree of several: not a cotangent of it
                    leaves = None
                    break
            if leaves is None:
                break
    if leaves is None:
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) structure as "
            "the args tuple of the primal function, and in particular must produce a tuple of length "
            "equal to the number of arguments to the primal function, but got bwd output structure "
            f"{tu.tree_structure(cts)} for primal input structure {tu.tree_structure(tuple(dyn))}."
        )
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tuple(dyn))]
    out = []
    for path, c, aval in zip(paths, leaves, in_avals):
        want = ad.tangent_aval(aval)
        if c is None or want.dtype == _dt.float0:
            out.append(Zero(want))
        elif type(c) is SymbolicZero:
            if c.aval.shape != want.shape or c.aval.dtype != want.dtype:
                raise ValueError(
                    "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not "
                    f"match the corresponding input tangent shape/dtype: at output{path} the "
                    f"SymbolicZero had shape/dtype {_long(c.aval)} while the corresponding input had "
                    f"shape/dtype {_long(aval)}. Consider just returning a None here instead of a "
                    "SymbolicZero object."
                )
            out.append(Zero(c.aval))
        else:
            got = core.get_aval(c)
            if got.shape != aval.shape and not bwd_checks["disabled"]:  # (JAX lets a dtype differ)
                raise ValueError(
                    "Custom VJP bwd rule must produce an output with the same type as the args tuple "
                    f"of the primal function, but at output{path} the bwd rule produced an output of "
                    f"type {_long(got)} corresponding to an input of type {_long(aval)}"
                )
            out.append(c)
    return out
