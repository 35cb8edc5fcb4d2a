"""The differentiation transformations of the public API: forward mode (``jvp``, ``linearize``)
and reverse mode (``vjp`` and its ``VJPFunction``, whose ``with_refs`` sends cotangents into Refs
as JAX 0.10's with the markers of ``jax.ad``: ``GradValue``, ``DontWant``, ``GradRef``,
``DidntWant``; ``grad``, ``value_and_grad``), with ``stop_gradient`` and ``linear_transpose``.

Layer: surface, under ``funcgrad.api`` (which re-exports these names and builds the Jacobians on
them). Imports the kernel (``ad``, the IR, pytrees, dtypes), the primitive catalog (for
``stop_gradient``), ``funcgrad._api_util`` (the shared argument handling), ``funcgrad._eager_grad``
(the recorded eager gradient), ``funcgrad.tree_util`` (``Partial``) and ``funcgrad.ref``
(``with_refs``' Refs).

Every function here accepts and returns pytrees; the kernel works on flat lists, so each one
flattens its inputs, runs the flat transformation, and unflattens. Errors name the
transformation, the argument (by position and pytree path) and the fix.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence

import numpy as np

from funcgrad import _transfer_guard
from funcgrad import tree_util as _public_tree_util
from funcgrad._api_util import (
    GRAD_DOC,
    VALUE_AND_GRAD_DOC,
    abstractify,
    arg_paths,
    canonical_numpy,
    canonicalize,
    check_array_leaves,
    check_input_dtypes,
    check_scalar_output,
    flat_fun,
    fun_sourceinfo,
    instantiate_public,
    normalize_argnums,
    partial_over,
    split_aux,
    to_public,
    unit_cotangent,
    user_transformation,
    wraps,
)
from funcgrad._control_flow_errors import tree_differences
from funcgrad._eager_grad import recorded_value_and_grad
from funcgrad._ref_scopes import HITYPES, box_type, lower_hi_values
from funcgrad.kernel import ad, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.held_state import Held
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.kernel.traceback_util import filter_at_boundary as _filter_at_boundary
from funcgrad.kernel.traceback_util import register_boundary_code as _register_boundary_code
from funcgrad.primitives import elementwise as _ew
from funcgrad.ref import Ref, addupdate, freeze, new_ref
from funcgrad.tree_util import Partial

# ----------------------------------------------------------------------------------------------
# Forward mode


@_api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), d fun(primals) · tangents)``.

    >>> import funcgrad.numpy as fnp
    >>> y, t = jvp(fnp.sin, (0.0,), (2.0,))
    >>> float(y), float(t)
    (0.0, 2.0)
    """
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(  # (JAX's words first)
            "primal and tangent arguments to jax.jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}. Write jvp(f, (x,), (t,))."
        )
    if _holds_hi_values(primals):  # (immutable high-level values as their low-level values)
        primals, tangents, fun = lower_hi_values(primals), lower_hi_values(tangents), _lowering_results(fun)
    flat_p, tree_p = tu.tree_flatten(tuple(primals))
    flat_t, tree_t = tu.tree_flatten(tuple(tangents))
    if tree_p != tree_t and type(primals) is type(tangents):  # a key's tangent: float0 of its shape
        spread = _spread_key_tangents(_key_tangent_layout(tuple(primals)), tuple(tangents), "jvp")
        flat_t, tree_t = (flat_t, tree_t) if spread is None else (spread, tree_p)
    if type(primals) is not type(tangents):  # (JAX compares them as given: a tuple is not a list)
        tree_p, tree_t = tu.tree_structure(primals), tu.tree_structure(tangents)
    if tree_p != tree_t:
        raise TypeError(
            "primal and tangent arguments to jax.jvp must have the same tree structure; primals have "
            f"tree structure {tree_p} whereas tangents have tree structure {tree_t}."
        )
    paths = arg_paths(tuple(primals))
    check_array_leaves("jvp", flat_p, paths, "primal")  # (jvp names its tangents below too)
    raw_p, flat_p = flat_p, canonicalize(flat_p)
    tangents_in = []
    for p, t, path in zip(flat_p, flat_t, paths):
        pa, ta = core.get_aval(p), core.get_aval(t)
        expected = _dt.tangent_dtype(pa.dtype)
        # A Python scalar's (weak) tangent of the primal's kind passes, whatever its width (JAX
        # gives it the primal's width); another kind (an int tangent of a float) is JAX's TypeError.
        # (JAX's words and order: the dtype, then the shape.)
        if ta.dtype != expected and not (ta.weak_type and ta.dtype.kind == expected.kind != "V"):
            raise TypeError(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case "
                "of int/bool primal dtype the tangent dtype must be float0."
                f"Got primal dtype {pa.dtype.name} and so expected tangent dtype {expected.name}, but got "
                f"tangent dtype {ta.dtype.name} instead. (jvp: tangent {path})"
            )
        if pa.shape != ta.shape:
            raise ValueError(
                "jvp called with different primal and tangent shapes;"
                f"Got primal shape {pa.shape} and tangent shape as {ta.shape} (jvp: tangent {path})"
            )
        if expected == _dt.float0:
            t = ad.Zero(ad.tangent_aval(pa))
        elif type(t) in _dt.python_scalar_types:  # a weak Array of the primal's width, as in JAX
            t = Array._from_owned(np.asarray(t, expected), weak_type=True)
        elif ta.weak_type != pa.weak_type and ta.dtype == expected:
            # A tangent takes its primal's weak type, as inside JAX's jax.numpy functions (each a
            # jit, whose JVP gives a tangent its primal's type): jvp of sin at 2.0 with a float64
            # tangent is weak. (A tangent returned as it is stays as given: NOTE: [outputs jvp and
            # vjp return as they are].)
            t = _ew.convert_element_type(t, expected, weak_type=pa.weak_type)
        tangents_in.append(t)
    flat, store = flat_fun(fun, tree_p, has_aux, transform="jvp")
    # NOTE: [primals as the caller gave them] (the tangents too)
    with ad.given_primals([*flat_p, *tangents_in], [*raw_p, *flat_t]):
        out_p, out_t = ad.jvp_flat(_passing_through(flat, store), flat_p, tangents_in)
    n = store["n_out"]
    out_avals = [ad.tangent_aval(core.get_aval(p)) for p in out_p]
    _, aux = split_aux(out_p, store, has_aux)
    primals_out = _as_returned(out_p[:n], store, raw_p)
    tangents_out = tu.tree_unflatten(
        store["out_tree"],
        [
            flat_t[j] if j is not None else _tangent_out(t, a)
            for t, a, j in zip(out_t[:n], out_avals, store["through"])
        ],
    )
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


# NOTE: [outputs jvp and vjp return as they are]
# As JAX's, ``jvp``, ``vjp`` and ``linearize`` return what the function did not compute as it
# was: an input the function returns unchanged is the caller's own object (a Python float stays a
# float, a NumPy array a NumPy array) and, in ``jvp``, its tangent the caller's tangent; a
# constant the function returned (a Python scalar, a NumPy value), or one a ``custom_jvp`` rule
# returned as a primal or tangent, is that constant. Inputs are still canonicalised for the trace
# (``canonicalize``: rules never see Python numbers); ``_passing_through`` notes which outputs
# are the traced inputs themselves, and only the public results are mapped back. Computed outputs
# (a built-in rule's tangent that is an input tangent included: JAX's rules compute it) and the
# zero tangents of constants are Arrays.


def _tangent_out(t, aval):
    # A constant a custom or user rule returned (the caller's own tangent included) as it is.
    return t if _constant(t) else instantiate_public(t, aval)


def _passing_through(flat, store):
    """``flat`` noting, per output leaf, the index of the input it returns unchanged (or None)."""

    def run(*args):
        outs = flat(*args)
        store["through"] = [next((i for i, a in enumerate(args) if o is a), None) for o in outs]
        return outs

    return run


def _constant(x) -> bool:
    return type(x) in _dt.python_scalar_types or isinstance(x, np.ndarray | np.generic)


def _as_returned(leaves, store, raw):
    """The output leaves as JAX returns them (NOTE: [outputs jvp and vjp return as they are])."""
    through = store["through"]
    return tu.tree_unflatten(
        store["out_tree"],
        [raw[j] if j is not None else x if _constant(x) else to_public(x) for x, j in zip(leaves, through)],
    )


def _linearized(name: str, fun: Callable, primals: tuple, has_aux: bool):
    """What ``linearize`` and ``vjp`` share: ``fun`` linearized at ``primals`` (checked and
    canonicalised, NOTE: [primals as the caller gave them]), with its outputs as JAX returns them
    (NOTE: [outputs jvp and vjp return as they are]) and its aux. Returns ``(flat primals, input
    tree, flat outputs, linear function, the flat function's store, outputs, aux)``."""
    flat_p, in_tree = tu.tree_flatten(primals)
    check_array_leaves(name, flat_p, lambda: arg_paths(primals))
    if name == "vjp":  # (NOTE: [x64 mode]: JAX's vjp hands on float32 for float64 NumPy values)
        flat_p = canonical_numpy(flat_p)
    raw_p, flat_p = flat_p, canonicalize(flat_p)
    flat, store = flat_fun(fun, in_tree, has_aux, transform=name)
    with ad.given_primals(flat_p, raw_p):  # NOTE: [primals as the caller gave them]
        out_p, lin = ad.linearize_flat(_passing_through(flat, store), flat_p)
    _, aux = split_aux(out_p, store, has_aux)
    out = _as_returned(out_p[: store["n_out"]], store, raw_p)
    return flat_p, in_tree, out_p, lin, store, out, aux


@_api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the linearized function
    (a staged linear jaxpr; the primal work is not redone).

    >>> import funcgrad.numpy as fnp
    >>> y, f_jvp = linearize(fnp.exp, 0.0)
    >>> float(f_jvp(3.0))
    3.0
    """
    _, in_tree, _, lin, store, out, aux = _linearized("linearize", fun, primals, has_aux)
    n = store["n_out"]

    # As JAX's, f_jvp is a ``tree_util.Partial`` whose leaves are the residuals, so it can be
    # returned from jit or vmap (equinox's checkpointed while_loop returns it from a jitted call).
    jvp_of = _LinearizedJVP(
        lin.closed.jaxpr, lin.in_avals, lin.out_avals, lin.out_zeros, in_tree, store["out_tree"], n
    )
    # (the axes of a shard_map body each primal varies along, as its type says there: JAX checks a
    # tangent's against them)
    jvp_of.vma = [_varying_of(p) for p in tu.tree_leaves(primals)]
    jvp_of.key_layout = _key_tangent_layout(primals)
    f_jvp = _public_tree_util.Partial(jvp_of, *lin.closed.consts)
    f_jvp.jaxpr = lin.closed
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _key_tangent_layout(primals):
    """Where ``primals`` hold typed PRNG keys, which are one leaf each for users (JAX's key
    arrays) but a node over their raw data for the transformations (NOTE: [public pytree
    registry]): ``(public tree, per public leaf None or (the keys' shape, their data leaves'
    shapes))``; None when no primal is a node of its own."""
    leaves, tree = _public_tree_util.tree_flatten(primals)
    slots, any_key = [], False
    for p in leaves:
        inner = tu.tree_leaves(p)
        if len(inner) == 1 and inner[0] is p:
            slots.append(None)
        else:
            any_key = True
            slots.append((tuple(np.shape(p)), [tuple(np.shape(x)) for x in inner]))
    return (tree, slots) if any_key else None


def _spread_key_tangents(layout, tangents, who: str):
    """Tangents given as JAX takes them (a key array's tangent: float0 of the key array's shape)
    as flat tangents of the transformations' leaves (float0 of each data leaf's shape), or None
    when ``tangents`` do not have the primals' public structure. A float0 tangent of another
    shape is JAX's ValueError; one of another dtype is passed on for the dtype check to name."""
    if layout is None:
        return None
    tree, slots = layout
    leaves, t_tree = _public_tree_util.tree_flatten(tangents)
    if t_tree != tree:
        return None
    out = []
    for t, slot in zip(leaves, slots):
        if slot is None or getattr(t, "dtype", None) != _dt.float0:
            out.append(t)
            continue
        shape, data_shapes = slot
        if tuple(np.shape(t)) != shape:
            raise ValueError(  # (JAX's words)
                f"{who} called with different primal and tangent shapes;Got primal shape {shape} and "
                f"tangent shape as {tuple(np.shape(t))}"
            )
        out.extend(np.zeros(s, _dt.float0) for s in data_shapes)
    return out


class _LinearizedJVP:
    """The function of ``linearize``'s ``f_jvp``: ``(*residuals, *tangents) -> output tangents``
    (its static part: the linear jaxpr and the trees; hashed by identity)."""

    def __init__(self, jaxpr, in_avals, out_avals, out_zeros, in_tree, out_tree, n_out):
        self.jaxpr, self.in_tree, self.out_tree, self.n_out = jaxpr, in_tree, out_tree, n_out
        self.avals = (list(in_avals), list(out_avals), list(out_zeros))
        self.__name__ = "f_jvp"

    @property
    def args(self) -> tuple:
        """As the ``functools.partial`` behind JAX's ``f_jvp.func``: the linear jaxpr first (JAX's
        remat tests print ``f_jvp.func.args[0]`` to see what is recomputed), then the trees."""
        return (self.jaxpr, self.in_tree, self.out_tree, self.avals[2])

    def __call__(self, *args):
        k = len(self.jaxpr.constvars)
        residuals, tangents = args[:k], args[k:]
        flat_t, t_tree = tu.tree_flatten(tangents)
        if t_tree != self.in_tree:  # a key's tangent: float0 of its shape
            spread = _spread_key_tangents(getattr(self, "key_layout", None), tangents, "linearize")
            flat_t, t_tree = (flat_t, t_tree) if spread is None else (spread, self.in_tree)
        if t_tree != self.in_tree:
            raise TypeError(
                f"linearize: tangents must have the primals' structure {self.in_tree}, got {t_tree}"
            )
        for t, want in zip(flat_t, self.avals[0]):  # (a weak Python scalar of the right kind passes)
            got = core.get_aval(t)
            if got.shape != want.shape or (
                got.dtype != want.dtype and not (got.weak_type and got.dtype.kind == want.dtype.kind)
            ):
                raise ValueError(  # (JAX's words)
                    "linearized function called on tangent values inconsistent with the original "
                    f"primal values: got tangent aval {got.str_short()} for primal aval "
                    f"{want.str_short()}"
                )
        _check_tangent_vma(flat_t, self.avals[0], getattr(self, "vma", ()))
        lin = ad.LinearFunction(ir.ClosedJaxpr(self.jaxpr, list(residuals)), *self.avals)
        outs = lin(*flat_t)
        n = self.n_out
        return tu.tree_unflatten(
            self.out_tree, [instantiate_public(o, a) for o, a in zip(outs[:n], lin.out_avals[:n])]
        )


def _varying_of(x):
    """The manual axes ``x``'s type (in a checked shard_map body) says it varies along, or None
    where its type has none."""
    try:
        mat = getattr(core.get_aval(x), "mat", None)
    except TypeError:
        return None
    return None if mat is None else frozenset(mat.varying)


def _check_tangent_vma(tangents, avals, vma) -> None:
    """JAX's ValueError for a tangent varying along manual axes its primal does not, or the
    reverse (``linearize``'s ``f_jvp`` in a shard_map body), with JAX's hint."""
    for t, want, p_vary in zip(tangents, avals, vma):
        t_vary = _varying_of(t)
        if p_vary is None or t_vary is None or t_vary == p_vary:
            continue
        hints = []
        if left := t_vary - p_vary:
            hints.append(
                f"applying `jax.lax.pcast(..., {tuple(sorted(left, key=str))}, to='varying')` to the primal "
                "value passed to `jax.linearize`"
            )
        if left := p_vary - t_vary:
            hints.append(
                f"applying `jax.lax.pcast(..., {tuple(sorted(left, key=str))}, to='varying')` to the tangent "
                "value passed to the callable `f_jvp` returned by `jax.linearize`"
            )
        got = core.get_aval(t)
        raise ValueError(  # (JAX's words)
            "linearized function called on tangent values inconsistent with the original primal values:\n"
            f"Got tangent aval {got.str_short()} for primal aval {want.str_short()} but expected "
            f"{want.str_short()}. \nThis might be fixed by:\n" + "\n".join(f"  * {h};" for h in hints)
        )


# ----------------------------------------------------------------------------------------------
# Reverse mode


# Where a cotangent goes in ``VJPFunction.with_refs`` (JAX 0.10's ``jax.ad``): asked for
# (``GradValue``) or not (``DontWant``); what the result holds instead of a value added into a Ref
# (``GradRef``) or one not asked for (``DidntWant``). The last two are pytree nodes without leaves.


@dataclasses.dataclass(frozen=True, slots=True)
class GradValue:
    """``with_refs``: return this primal's cotangent."""


@dataclasses.dataclass(frozen=True, slots=True)
class DontWant:
    """``with_refs``: this primal's cotangent is not wanted."""


@dataclasses.dataclass(frozen=True, slots=True)
class GradRef:
    """In ``with_refs``'s result: the cotangent was added into the Ref given for this primal."""


@dataclasses.dataclass(frozen=True, slots=True)
class DidntWant:
    """In ``with_refs``'s result: the cotangent was not wanted (``DontWant``)."""


tu.register_dataclass(GradRef, [], [])
tu.register_dataclass(DidntWant, [], [])


class VJPFunction:
    """The backward function returned by ``vjp``: call it with output cotangents, any number of
    times (PyTorch's ``retain_graph=True``). ``.jaxpr`` is the linear program it transposes and
    ``.residuals`` the values it keeps (``ctx.save_for_backward``)."""

    def __init__(self, lin: ad.LinearFunction, in_tree, out_tree, n_out: int):
        self._lin = lin  # (its transpose follows the context's convention, NOTE: [transpose conventions])
        self._in_tree = in_tree
        self._out_tree = out_tree
        self._n_out = n_out

    @property
    def jaxpr(self) -> ir.ClosedJaxpr:
        return self._lin.closed

    @property
    def residuals(self) -> list:
        return self._lin.residuals

    _fun_name = "the function"
    _fun_src = "<unknown>"  # (JAX's name of the differentiated function: ``f at file:line``)

    def __call__(self, *args):
        if len(args) != 1:  # (JAX's words)
            name = self._fun_name
            raise TypeError(
                f"The function returned by `jax.vjp` applied to {name} was called with {len(args)} "
                "arguments, but functions returned by `jax.vjp` must be called with a single argument "
                f"corresponding to the single value returned by {name} (even if the returned value is "
                "a tuple or other container): call f_vjp((ct1, ct2)), not f_vjp(ct1, ct2)."
            )
        return tu.tree_unflatten(self._in_tree, self._input_cotangents(lower_hi_values(args[0])))

    def with_refs(self, *maybe_ct_refs):
        """The backward function with, for each primal leaf, where its cotangent goes (JAX 0.10's
        ``f_vjp.with_refs``): ``GradValue()`` returns it, a ``Ref`` has it added into it (the
        result holds ``GradRef()`` there) and ``DontWant()`` drops it (``DidntWant()``); any other
        leaf is taken for ``GradValue()``, as JAX's (its ``ValAccum``). With no arguments every
        cotangent is returned, as by calling ``f_vjp``.

        >>> from funcgrad.ref import new_ref
        >>> _, f_vjp = vjp(lambda a, b: a * b, 2.0, 3.0)
        >>> r = new_ref(10.0)
        >>> f_vjp.with_refs(r, DontWant())(1.0), float(r[...])
        ((GradRef(), DidntWant()), 13.0)
        """
        n = self._in_tree.num_leaves
        wants = [GradValue()] * n if not maybe_ct_refs else tu.tree_leaves(maybe_ct_refs)
        if len(wants) != n or (maybe_ct_refs and tu.tree_structure(maybe_ct_refs) != self._in_tree):
            raise ValueError(
                f"vjp function's with_refs: give one GradValue(), DontWant() or Ref per primal leaf, "
                f"in the primals' structure {self._in_tree}; got {tu.tree_structure(maybe_ct_refs)}"
            )
        for i, (w, aval) in enumerate(zip(wants, self._lin.in_avals)):
            want = ir.ShapedArray(aval.shape, _dt.tangent_dtype(aval.dtype))
            if isinstance(w, Ref) and (w.shape, w.dtype) != (want.shape, want.dtype):
                raise ValueError(
                    f"vjp function's with_refs: the Ref for primal leaf {i} holds "
                    f"{core.get_aval(w[...]).str_short()}, but that primal's cotangent is "
                    f"{want.str_short()}; give a Ref of the cotangent's shape and dtype"
                )

        def backward(cotangents):
            out = []
            for w, ct in zip(wants, self._input_cotangents(cotangents)):
                if isinstance(w, Ref):
                    addupdate(w, ..., ct)
                    out.append(GradRef())
                else:
                    out.append(DidntWant() if isinstance(w, DontWant) else ct)
            return tu.tree_unflatten(self._in_tree, out)

        return backward

    def _input_cotangents(self, cotangents) -> list:
        """One cotangent per primal leaf, for the output cotangents ``cotangents`` (checked)."""
        flat_ct, ct_tree = tu.tree_flatten(cotangents)
        if ct_tree != self._out_tree:  # (JAX's type and words)
            differences = "\n".join(
                f"  * out{tu.keystr(path)} was a {thing1} in the original output, but a {thing2} here, "
                f"so {explanation}."
                for path, thing1, thing2, explanation in tree_differences(self._out_tree, ct_tree)
            )
            raise ValueError(
                "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must "
                "match the pytree\nstructure of the differentiated function "
                f"{self._fun_src}.\n\nBut the tree structures differ:\n{differences}"
            )
        avals = self._lin.out_avals[: self._n_out]
        for i, (ct, aval) in enumerate(zip(flat_ct, avals)):
            ca = core.get_aval(ct)
            expected = _dt.tangent_dtype(aval.dtype)
            # As in JAX: a cotangent has its output's shape and exactly its cotangent dtype (no
            # silent cast, which would hide a float32/float64 mix-up); any dtype stands for the
            # float0 cotangent of an integer output.
            if ca.shape != aval.shape or (expected != _dt.float0 and ca.dtype != expected):
                want = ir.ShapedArray(aval.shape, expected)
                path = tu.keystr(tu.tree_leaves_with_path(cotangents)[i][0]) or "(the whole cotangent)"
                raise ValueError(
                    "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got "
                    f"{ca.str_short()}, but expected {want.str_short()} because the corresponding output "
                    f"of the function {self._fun_name} had shape/dtype {aval.str_short()}.\n"
                    f"vjp function: cotangent {path} has type {ca.str_short()}, but the function's "
                    f"output there has cotangent type {want.str_short()}; pass a cotangent of that "
                    f"shape and dtype (e.g. .astype({expected.name}))"
                )
        aux_zeros = [ad.Zero(a) for a in self._lin.out_avals[self._n_out :]]
        cts_in = self._lin.transpose([*flat_ct, *aux_zeros])
        # A constant (the caller's cotangent passed through, a custom bwd's Python or NumPy
        # scalar) is returned as it is, as JAX's (NOTE: [outputs jvp and vjp return as they are]).
        # (a zero cotangent has the input's cotangent type: NOTE: [unreduced values])
        return [
            ct if _constant(ct) else instantiate_public(ct, ad.ct_aval(a))
            for ct, a in zip(cts_in, self._lin.in_avals)
        ]


def _flatten_vjp(f: VJPFunction):
    lin = f._lin
    others = tuple(sorted((k, v) for k, v in vars(f).items() if k != "_lin"))
    static = (lin.closed.jaxpr, tuple(lin.in_avals), tuple(lin.out_avals), tuple(lin.out_zeros), others)
    return list(lin.closed.consts), static


def _unflatten_vjp(static, residuals) -> VJPFunction:
    jaxpr, in_avals, out_avals, out_zeros, others = static
    f = object.__new__(VJPFunction)
    for k, v in others:
        setattr(f, k, v)
    f._lin = ad.LinearFunction(
        ir.ClosedJaxpr(jaxpr, list(residuals)), list(in_avals), list(out_avals), list(out_zeros)
    )
    return f


# As JAX's, the vjp function is a pytree: its leaves are the values the backward pass keeps, its
# structure the linear program (so a jitted forward pass can return it and a jitted backward pass
# take it, compiled once per structure: ``fwd_and_bwd``; ``make_jaxpr`` of a ``vjp`` returns it,
# and JAX's gradient-checkpointing tutorial flattens it to print the backward program).
tu.register_pytree_node(VJPFunction, _flatten_vjp, _unflatten_vjp)


def _holds_hi_values(tree) -> bool:
    """Whether ``tree`` holds immutable high-level values (funcgrad.experimental.hijax)."""
    return bool(HITYPES) and any(type(x) in HITYPES and box_type(x) is None for x in tu.tree_leaves(tree))


def _lowering_results(fun):
    """``fun`` whose immutable high-level results go out as their low-level values."""

    @functools.wraps(fun)
    def lowered(*args, **kwargs):
        return lower_hi_values(fun(*args, **kwargs))

    return lowered


@_api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(fun(*primals), vjp_fn)``; ``vjp_fn(ct)`` returns a tuple of cotangents,
    one per primal. Implemented as linearize + transpose.

    >>> import funcgrad.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> float(f_vjp(1.0)[0])
    1.0
    """
    if _holds_hi_values(primals):  # (immutable high-level values as their low-level values)
        primals, fun = lower_hi_values(primals), _lowering_results(fun)
    leaves, tree = tu.tree_flatten(primals)
    held = Held(leaves)
    if held:  # Refs among the primals are state, closed over (NOTE: [held state operands])
        return _vjp_of_refs(fun, tree, held, leaves, has_aux)
    flat_p, in_tree, out_p, lin, store, out, aux = _linearized("vjp", fun, primals, has_aux)
    lin = ad.primals_first(lin, flat_p)  # JAX's order of the residuals (NOTE: [vjp residuals])
    scalars = [x if type(x) in _dt.python_scalar_types else None for x in tu.tree_leaves(primals)]
    if any(v is not None for v in scalars):
        lin = ad.literal_primals(lin, flat_p, scalars)  # (JAX's literals: NOTE: [vjp residuals])
    lin = ad.in_context(lin, flat_p, out_p[: store["n_out"]])  # NOTE: [transpose conventions]
    fn = VJPFunction(lin, in_tree, store["out_tree"], store["n_out"])
    fn._fun_name = getattr(fun, "__name__", None) or type(fun).__name__  # (for its errors)
    fn._fun_src = fun_sourceinfo(fun)
    return (out, fn, aux) if has_aux else (out, fn)


def _vjp_of_refs(fun: Callable, tree, held: Held, leaves: list, has_aux: bool):
    """``vjp`` where some primals are Refs (NOTE: [held state operands]): as ``vmap`` maps a Ref
    argument, each Ref's value is a primal and ``fun`` gets a Ref holding it, whose final value is
    written back into the Ref after (JAX's vjp differentiates through a Ref primal: a write of a
    differentiated value into it is no error there). The vjp function gives each Ref primal the
    cotangent of the value it held."""
    refs = list({id(r): r for r in held.at.values()}.values())  # (one value per distinct Ref)
    number = {id(r): k for k, r in enumerate(refs)}

    def with_values(kept, values):
        inner = [new_ref(v) for v in values]
        full = [inner[number[id(x)]] if i in held.at else x for i, x in enumerate(held.full(kept))]
        out = fun(*tu.tree_unflatten(tree, full))
        out, aux = out if has_aux else (out, None)
        return out, (aux, [freeze(r) for r in inner])

    with_values.__name__ = getattr(fun, "__name__", "fun")
    out, inner_vjp, (aux, finals) = vjp(
        with_values, held.kept(leaves), [freeze(r) for r in refs], has_aux=True
    )
    for r, v in zip(refs, finals):
        r[...] = v

    def vjp_fn(ct):
        kept_cts, value_cts = inner_vjp(ct)
        full = held.full(kept_cts)
        full = [value_cts[number[id(held.at[i])]] if i in held.at else c for i, c in enumerate(full)]
        return tu.tree_unflatten(tree, full)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _check_grad_inputs(name, dyn_args, argnums, holomorphic, allow_int, forward=False):
    leaves = tu.tree_leaves(tuple(dyn_args))
    paths = lambda: arg_paths(tuple(dyn_args), argnums)  # noqa: E731 - named only on an error
    check_array_leaves(name, leaves, paths)
    check_input_dtypes(name, leaves, paths, holomorphic=holomorphic, allow_int=allow_int, forward=forward)


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
):
    """``(fun(*args), grad(fun)(*args))`` in one pass. ``holomorphic=True`` differentiates a
    holomorphic function of complex inputs (NOTE: [differentiation dtypes]).

    >>> import funcgrad.numpy as fnp
    >>> v, g = value_and_grad(lambda x: (x ** 2).sum())(fnp.array([1.0, 2.0]))
    >>> float(v), g.tolist()
    (5.0, [2.0, 4.0])
    """
    _refuse_reduce_axes(reduce_axes)
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, with_value=True)


def _refuse_reduce_axes(reduce_axes) -> None:
    # JAX 0.10's grad and value_and_grad keep the parameter (jaxlie passes its default) and
    # refuse any axes in these words.
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to grad is deprecated")


# (grad's own frames and those of vmap's machinery between a user's call and grad: vmap(grad(f))
# asks too, as JAX's seed is transferred there; NOTE: [transfer guard])
_SEED_FRAMES = (__file__,) + tuple(
    os.path.join(os.path.dirname(__file__), *path)
    for path in (("_vmap.py",), ("_api_util.py",), ("kernel", "batching.py"), ("kernel", "traceback_util.py"))
)


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, *, with_value: bool):
    """``value_and_grad``, and ``grad`` with ``with_value=False`` (which discards the value, so the
    eager program cache need not keep it)."""
    name = "value_and_grad" if with_value else "grad"  # (for messages only)

    @wraps(fun, docstr=VALUE_AND_GRAD_DOC, argnums=argnums)
    def value_and_grad_f(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - a boundary's frame (NOTE: [traceback boundaries])
        try:  # a traceback boundary, inline (NOTE: [traceback boundaries])
            nums = normalize_argnums("grad", argnums, len(args))
            # (an immutable high-level argument is differentiated as its low-level values, its
            # gradient raised back: hijax_test test_hitypes_as_grad_args)
            dyn = lower_hi_values([args[i] for i in nums])
            _check_grad_inputs("grad", dyn, nums, holomorphic, allow_int)
            f = partial_over(fun, args, kwargs, nums)
            with user_transformation(name, fun):
                # Eagerly, through a recorded program (NOTE: [eager grad program cache]).
                recorded = None if holomorphic else recorded_value_and_grad(f, dyn, has_aux, with_value)
                if recorded is None:
                    out, f_vjp, aux = vjp(f, *dyn, has_aux=True) if has_aux else (*vjp(f, *dyn), None)
                    grads = None
                else:
                    out, aux, grads, vjp_parts = recorded  # (grads: the cached program computed them)
                    f_vjp = None if vjp_parts is None else VJPFunction(*vjp_parts)
            if grads is None:
                check_scalar_output("grad", out, holomorphic=holomorphic)
                seed = unit_cotangent(core.get_aval(tu.tree_leaves(out)[0]))
                grads = f_vjp(tu.tree_unflatten(tu.tree_structure(out), [seed]))
            if _transfer_guard.state.host_to_device:
                # NOTE: [transfer guard]: JAX's eager backward pass takes its seed 1.0 as an argument
                # (of the value's dtype; grad's cached program may not keep the value: a gradient's)
                known = tu.tree_leaves(out) or tu.tree_leaves(grads)
                seed_dtype = core.get_aval(known[0]).dtype if known else np.float32
                _transfer_guard.eager_operand(np.ones((), seed_dtype), _SEED_FRAMES)
            g = grads[0] if isinstance(argnums, int) else tuple(grads)
            return ((out, aux), g) if has_aux else (out, g)
        except Exception as e:
            _filter_at_boundary(e)
            raise

    _register_boundary_code(value_and_grad_f.__code__)
    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
):
    """The gradient of a scalar function with respect to ``args[argnums]`` (pytrees allowed).

    ``grad(grad(f))`` differentiates the backward program itself (PyTorch's
    ``create_graph=True``). Outputs must be real unless ``holomorphic=True``, which takes the complex
    derivative ``f'(z)`` of a holomorphic function of complex inputs, as JAX does.

    >>> import funcgrad.numpy as fnp
    >>> float(grad(fnp.tanh)(0.0)), float(grad(grad(lambda x: x ** 3))(2.0))
    (1.0, 12.0)
    >>> complex(grad(lambda z: z ** 2, holomorphic=True)(1.0 + 2.0j))
    (2+4j)
    """
    _refuse_reduce_axes(reduce_axes)
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, with_value=False)

    @wraps(fun, docstr=GRAD_DOC, argnums=argnums)
    def grad_f(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - a boundary's frame (NOTE: [traceback boundaries])
        try:  # a traceback boundary, inline (NOTE: [traceback boundaries])
            if has_aux:
                (_, aux), g = vg(*args, **kwargs)
                return g, aux
            return vg(*args, **kwargs)[1]
        except Exception as e:
            _filter_at_boundary(e)
            raise

    _register_boundary_code(grad_f.__code__)
    return grad_f


def stop_gradient(x):
    """The identity whose derivative is zero (PyTorch's ``detach``/``no_grad``); maps over pytrees.

    >>> float(grad(lambda x: x * stop_gradient(x))(3.0))
    3.0
    """

    def stop(leaf):
        if core.is_array_like(leaf) and _dt.is_inexact(core.get_aval(leaf).dtype):
            return _ew.stop_gradient_p.bind(leaf)
        return leaf

    return tu.tree_map(stop, x)


def _weak_scalar(x) -> bool:
    return type(x) in (int, float, complex)


def _same_kind(a, b) -> bool:
    return a.dtype.kind == b.dtype.kind or (a.dtype.kind in "iu" and b.dtype.kind in "fc")


def _scalar_cotangent(ct, aval):
    typed = _dt.typed_scalar(ct)
    if aval.weak_type and getattr(typed, "dtype", None) == aval.dtype:
        return typed
    return _ew.convert_element_type(ct, aval.dtype, aval.weak_type)


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear function ``fun`` at the avals of ``primals``.

    >>> import funcgrad.numpy as fnp
    >>> t = linear_transpose(lambda x: 3.0 * x, 1.0)
    >>> float(t(1.0)[0])
    3.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    in_avals = [abstractify(p) for p in flat_p]  # values or, as in JAX, ShapedArray/ShapeDtypeStruct
    flat, store = flat_fun(fun, in_tree)
    # (traced at the primals' avals, weak types kept as JAX's: the transpose of a linear function
    # at a Python float, applied to one, is weak -- custom_derivatives.linear_call's docstring)
    closed = trace_to_jaxpr(flat, in_avals)
    out_avals = closed.out_avals
    kinds = {_dt.is_inexact(a.dtype) or (a.dtype.kind in "iu" and "int") for a in [*in_avals, *out_avals]}
    if kinds not in ({True}, {"int"}, set()):  # (JAX's words)
        raise TypeError(
            "linear_transpose only supports [float or complex] -> [float or complex], and integer -> "
            f"integer functions, but got {[a.dtype for a in in_avals]} -> {[a.dtype for a in out_avals]}."
        )

    def transposed(consts, *cotangents):
        flat_ct, ct_tree = tu.tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)
        if ct_tree != store["out_tree"]:
            raise TypeError(
                "cotangent tree does not match function output, expected "
                f"{store['out_tree']} but got {ct_tree}"
            )
        for a, ct in zip(out_avals, flat_ct):
            c = abstractify(ct)
            if c.shape != a.shape or (c.dtype != a.dtype and not (_weak_scalar(ct) and _same_kind(c, a))):
                raise TypeError(
                    f"cotangent type does not match function output, expected {out_avals} but got {flat_ct}"
                )
        # (a Python scalar cotangent takes its output's type, weak where the output is: typed, as
        # JAX's bind makes it, where that is its own weak type -- a linear_call that forwards it
        # returns TypedFloat(1.0, dtype=float32) as JAX's)
        flat_ct = [_scalar_cotangent(ct, a) if _weak_scalar(ct) else ct for a, ct in zip(out_avals, flat_ct)]
        undefined = [ad.UndefinedPrimal(a) for a in in_avals]
        cts = ad.backward_pass(closed.jaxpr, consts, undefined, flat_ct, integer=kinds == {"int"})
        cts = [instantiate_public(c, ad.ct_aval(a)) for c, a in zip(cts, in_avals)]
        return tuple(tu.tree_unflatten(in_tree, cts))

    # As JAX's: a Partial over the program's constants, a pytree, so the transposed function can be
    # returned from and passed to jitted functions (api_test test_linear_transpose_fun_jit).
    return Partial(transposed, list(closed.consts))
