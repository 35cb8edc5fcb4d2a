"""The boundary between a user's custom derivative rule and the kernel: what a rule receives
and returns in place of the kernel's ``Zero`` (``SymbolicZero``, ``CustomVJPPrimal``; NOTE:
[symbolic zeros in custom rules] in custom_derivatives.py), a call's arguments resolved to
positions (defaults filled in, as JAX binds them) and split into the differentiable and the
``nondiff_argnums`` ones, and the user's rules wrapped on flat leaves (``jvp_rule``, ``vjp_rules``:
zeros converted both ways, results checked as JAX checks them), as the primitives call them.

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
from funcgrad.kernel.hooks import hooks


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


def _long(aval, varying=()) -> str:
    """An aval as JAX's error messages print it (``float32[3]``: long dtype, no weak type), with
    the manual axes it varies along (``float32[3]{V:i}``)."""
    names = sorted(map(str, varying or ()))
    vma = "{V:" + (names[0] if len(names) == 1 else f"({','.join(names)})") + "}" if names else ""
    return aval.str_short(short_dtypes=False) + vma


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


def bwd_cotangents(cts, dyn, in_avals, varying_of=None) -> list:
    """A ``bwd`` rule's result as one cotangent (or ``Zero``) per differentiable argument leaf,
    checked as JAX checks it. ``dyn`` has the differentiable arguments' structure; ``None``
    stands for zeros of the whole subtree where it is, and a list of the right length is a tuple.
    ``varying_of(ct)``: the manual axes a cotangent varies along in a checked shard_map body
    (NOTE: [custom_vjp in a checked body]), or None where that is not known.

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
            vma = varying_of(c) if varying_of is not None else None
            bad_vma = vma is not None and vma != aval.mat.varying
            if (got.shape != aval.shape or bad_vma) and not bwd_checks["disabled"]:
                # (JAX lets a dtype differ)
                extra = ", so the manual axis types do not match" if got.shape == aval.shape else ""
                want_vma = aval.mat.varying if vma is not None else frozenset()
                raise ValueError(
                    "Custom VJP bwd rule must produce an output with the same type as the args tuple "
                    f"of the primal function, but at output{path} the bwd rule produced an output of "
                    f"type {_long(got, vma)} corresponding to an input of type {_long(aval, want_vma)}"
                    f"{extra}"
                )
            out.append(c)
    return out


# ----------------------------------------------------------------------------------------------
# The user's rules on flat leaves, as the primitives call them


def jvp_rule(custom, nondiff: dict, in_tree, name: str, out_tree_box: list, out_avals=None):
    """The JVP rule of the ``custom_jvp`` ``custom`` on flat leaves: ``jvp_flat(primals,
    tangents) -> (primals_out, tangents_out)``, kernel ``Zero`` tangents converted both ways (NOTE:
    [symbolic zeros in custom rules]) and its results checked as JAX checks them. ``out_tree_box``
    holds the primal function's output structure when it was traced (and ``out_avals`` its output
    types); otherwise the rule's primal output states it (and is appended)."""
    user_jvp, symbolic = custom.jvp, custom.symbolic_zeros
    rule_name = getattr(user_jvp, "__name__", "jvp")

    def jvp_flat(primals, tangents):
        # The caller's own primal objects, as JAX's rule gets them (NOTE: [primals as the caller
        # gave them]).
        p = tu.tree_unflatten(in_tree, [ad.as_given(x) for x in primals])
        t = tu.tree_unflatten(in_tree, [_zero_to_user(ad.as_given(x), symbolic) for x in tangents])
        nondiff_vals = [nondiff[i] for i in sorted(nondiff)]
        out = user_jvp(*nondiff_vals, tuple(p), tuple(t))
        if not (isinstance(out, tuple | list) and len(out) == 2):
            raise TypeError(
                f"Custom JVP rule {rule_name} for function {name} must produce a pair (list or tuple "
                f"of length two) representing primal and tangent outputs, but got {out!r}."
            )
        p_out, t_out = out
        p_leaves, p_tree = tu.tree_flatten(p_out)
        t_leaves, t_tree = tu.tree_flatten(t_out)
        if p_tree != t_tree:
            raise TypeError(
                f"Custom JVP rule {rule_name} for function {name} must produce primal and tangent "
                f"outputs with equal container (pytree) structures, but got {p_tree} and {t_tree} "
                "respectively."
            )
        want_tree = out_tree_box[0] if out_tree_box else None
        check_primal_out("JVP", rule_name, name, p_tree, p_leaves, want_tree, out_avals)
        if not out_tree_box:
            out_tree_box.append(p_tree)
        t_leaves = [_zero_from_user(x) for x in t_leaves]
        check_tangents_out([core.get_aval(x) for x in p_leaves], t_leaves)
        return p_leaves, t_leaves

    jvp_flat.__name__ = rule_name
    return jvp_flat


def vjp_rules(custom, nondiff: dict, dyn, in_tree, name: str, out_tree_box: list, out_avals=None):
    """The ``fwd`` and ``bwd`` of the ``custom_vjp`` ``custom`` on flat leaves:
    ``fwd_flat(perturbed, *primals) -> [*out, *residuals]`` and ``bwd_flat(residuals, cotangents)
    -> cotangents`` (kernel ``Zero``s converted both ways, results checked). ``out_tree_box`` holds
    the primal function's output structure when it was traced; otherwise ``fwd``'s output states it
    (and is appended)."""
    user_fwd, user_bwd, symbolic = custom.fwd, custom.bwd, custom.symbolic_zeros
    n_args = len(nondiff) + len(dyn)
    in_avals = [core.get_aval(x) for x in tu.tree_leaves(dyn)]
    nondiff_vals = [nondiff[i] for i in sorted(nondiff)]
    res_tree_box: list = []
    res_vma_box: list = []  # (the residuals' manual axes, in a checked shard_map body)
    # (called in a checked shard_map body: NOTE: [custom_vjp in a checked body])
    manual = hooks.custom_vjp_manual(in_avals, out_avals)
    fwd_name = getattr(user_fwd, "__name__", "fwd")
    # (bwd needs the arguments' structure only: it keeps no tracer of the call alive, which a
    # jaxpr holding bwd in its params would keep -- NOTE: [leak checking])
    dyn = tu.tree_map(lambda _: 0, dyn)

    def fwd_flat(perturbed, *primals):
        primals = [ad.as_given(x) for x in primals]  # NOTE: [primals as the caller gave them]
        watch = manual.watch(primals, manual.in_varying) if manual is not None else None
        if symbolic:
            primals = [CustomVJPPrimal(x, p) for x, p in zip(primals, perturbed)]
        out = user_fwd(*_merge(nondiff, tu.tree_unflatten(in_tree, primals), n_args))
        if not (isinstance(out, tuple | list) and len(out) == 2):
            raise TypeError(
                f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list or "
                "tuple of length two) where the first element represents the primal output (equal to "
                f"those of the custom_vjp-decorated function {name}) and the second element "
                "represents residuals (i.e. values stored from the forward pass for use on the "
                f"backward pass), but instead of a pair the fwd rule {fwd_name} produced {out}."
            )
        y, res = out
        y_leaves, y_tree = tu.tree_flatten(y)
        want_tree = out_tree_box[0] if out_tree_box else None
        check_primal_out("VJP fwd", fwd_name, name, y_tree, y_leaves, want_tree, out_avals)
        if not out_tree_box:
            out_tree_box.append(y_tree)
        res_leaves, res_tree = tu.tree_flatten(res)
        res_tree_box.append(res_tree)
        if watch is not None:
            res_vma_box.append([watch.varying(r) for r in res_leaves])
            manual.typed_results(y_leaves, watch)
        return [*y_leaves, *res_leaves]

    def bwd_flat(res_leaves, ct_leaves):
        res = tu.tree_unflatten(res_tree_box[-1], res_leaves)
        if manual is not None:
            ct_leaves = manual.cts_in(ct_leaves)
        user_cts = [_zero_to_user(c, symbolic) for c in ct_leaves]
        ct = tu.tree_unflatten(out_tree_box[0], user_cts)
        watch = None
        if manual is not None:
            res_vma = res_vma_box[-1] if res_vma_box else [None] * len(res_leaves)
            watch = manual.watch([*user_cts, *res_leaves], [*manual.out_varying, *res_vma])
        if watch is None:
            return bwd_cotangents(user_bwd(*nondiff_vals, res, ct), dyn, in_avals)
        with watch:
            out = user_bwd(*nondiff_vals, res, ct)
        return manual.cts_out(bwd_cotangents(out, dyn, in_avals, watch.varying))

    fwd_flat.__name__ = fwd_name
    fwd_flat.count_out = lambda: out_tree_box[0].num_leaves
    bwd_flat.__name__ = getattr(user_bwd, "__name__", "bwd")
    return fwd_flat, bwd_flat
