"""Automatic differentiation: forward mode (JVP), linearize, transposition, reverse mode (VJP).

Layer: kernel. Imports ``core``, ``ir``, ``dtypes``, ``partial_eval``, ``tree_util`` and ``hooks`` (the
array operations the catalog registers, NOTE: [kernel registration]).

``vjp`` is ``linearize`` followed by ``backward_pass``: the JVP of ``f`` is traced with the primals
known and the tangents unknown, so the primal work runs now and the tangent work is staged into a
linear jaxpr (see NOTE: [residuals are constvars]); the backward pass transposes that jaxpr, one
transpose rule per linear primitive. Because the backward pass is ordinary primitive binds on the
current trace, it can itself be differentiated, batched or staged.

# NOTE: [symbolic zeros]
# A tangent or cotangent known to be zero is ``Zero(aval)``, never an array of zeros. The JVP
# trace does not even create a tracer for a value whose tangent is zero (it returns the primal),
# ``defjvp`` skips the rule of every input with a zero tangent, and the backward pass skips every
# equation whose output cotangents are all zero. A zero is materialised only by ``instantiate``.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad.kernel import core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as _tu
from funcgrad.kernel.core import source_info_config, user_source_info
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from funcgrad.kernel.partial_eval import JaxprBuilder, PartialEvalTrace, dce_jaxpr_consts, trace_to_jaxpr

# ----------------------------------------------------------------------------------------------
# Symbolic zeros


class Zero:
    """A symbolic zero tangent or cotangent of abstract value ``aval``."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal_value(x) -> Zero:
        return Zero(tangent_aval(core.get_aval(x)))

    def __repr__(self):  # (JAX's: the aval's str, 'Zero(~float32[])', as jax-primitives.md prints)
        return f"Zero({self.aval})"


# A pytree node without children, as JAX's: ``vmap``/``tree_map`` over a structure that holds a
# ``Zero`` pass it through (equinox's batched primitive JVP rules vmap their rule over Zero
# tangents and get Zero outputs back: lineax's test_vmap_jvp).
_tu.register_pytree_node(Zero, lambda z: ((), z.aval), lambda aval, _: Zero(aval))


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    # (avals are immutable: the primal's serves, with its sharding type; bfloat16 and the other
    # ml_dtypes floats are NumPy kind 'V', so is_inexact, not the kind, decides)
    if aval.dtype.kind in "fc" or _dt.is_inexact(aval.dtype):
        return aval
    return ShapedArray(aval.shape, _dt.tangent_dtype(aval.dtype), aval.weak_type)


def ct_aval(aval: ShapedArray) -> ShapedArray:
    """The type of a cotangent of a value of ``aval``: its tangent type with the unreduced and
    reduced mesh axes of its sharding swapped (JAX's ``to_ct_aval``: the cotangent of a value
    reduced over an axis is a partial sum over it, and the reverse; NOTE: [unreduced values] in
    funcgrad/_sharding_unreduced.py)."""
    t = tangent_aval(aval)
    s = getattr(t, "_sharding", None)
    spec = getattr(s, "spec", None)
    if spec is None or not (spec.unreduced or spec.reduced):
        return t
    return t.update(sharding=s.with_spec(spec.update(unreduced=spec.reduced, reduced=spec.unreduced)))


def instantiate(t):
    """Materialise a symbolic zero; other values pass through."""
    return hooks.zeros(t.aval) if type(t) is Zero else t


def add_tangents(x, y):
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return hooks.add_any(x, y)


class UndefinedPrimal:
    """Marks a linear input of an equation during transposition (its value is not known)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):  # (JAX's: 'UndefinedPrimal(~float32[])')
        return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


# ----------------------------------------------------------------------------------------------
# Rule helpers: one-line derivative rules


def defjvp(primitive: core.Primitive, *rules: Callable | None, uses_answer: bool = False) -> None:
    """JVP from one rule per input: ``rule(t, *primals, **params)`` is that input's contribution.

    With ``uses_answer``, each rule also receives the primal output before the primals:
    ``rule(t, ans, *primals)`` (``exp``: ``lambda t, ans, x: t * ans``). Inputs with a zero tangent
    are skipped (see NOTE: [symbolic zeros]); ``None`` marks an input the output does not depend on
    differentiably (an index, say).

    >>> # sin_p:  defjvp(sin_p, lambda t, x: t * cos(x))
    >>> # exp_p:  defjvp(exp_p, lambda t, ans, x: t * ans, uses_answer=True)
    """

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        leading = (out, *primals) if uses_answer else primals
        total = None
        for rule, t in zip(rules, tangents):
            if rule is None or type(t) is Zero:
                continue
            contribution = rule(t, *leading, **params)
            total = contribution if total is None else hooks.add_any(total, contribution)
        return out, Zero.from_primal_value(out) if total is None else total

    primitive.def_jvp(jvp)


def defjvp_zero(primitive: core.Primitive) -> None:
    """Mark a primitive as not differentiable: its outputs have zero tangents (comparisons,
    argmax, integer ops)."""

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero.from_primal_value(o) for o in out]
        return out, Zero.from_primal_value(out)

    primitive.def_traits(not_differentiable=True)
    primitive.def_jvp(jvp)


def zero_series(primal, order: int) -> list:
    """``order`` symbolic zero Taylor terms of ``primal``'s tangent type (``kernel/taylor.py``)."""
    z = Zero.from_primal_value(primal)
    return [z] * order


def is_zero_series(series: Sequence) -> bool:
    return all(type(t) is Zero for t in series)


def linear_taylor(primitive: core.Primitive, term_params: dict | None = None) -> Callable:
    """The Taylor rule of a primitive linear in its inexact operands (integer operands -- indices,
    a predicate -- are held at their primal value): ``f(x(t)) = sum_k f(x_k) t^k``.

    ``deflinear`` primitives get it automatically (``kernel/taylor.py``, NOTE: [Taylor
    coefficients]); selections and index maps (``gather``,
    ``dynamic_slice``, ``select_n``, ``scatter``) are declared with it. ``term_params`` overrides
    parameters for the terms (a gather fills out-of-bounds windows of the terms with 0).
    """
    term_params = term_params or {}

    def rule(primals, series, **params):
        out = primitive.bind(*primals, **params)
        outs = out if primitive.multiple_results else [out]
        order = len(series[0])
        if not all(_dt.is_inexact(core.get_aval(o).dtype) for o in outs):
            # A conversion to an integer or boolean type is piecewise constant.
            zeros = [zero_series(o, order) for o in outs]
            return out, zeros if primitive.multiple_results else zeros[0]
        varying = [_dt.is_inexact(core.get_aval(p).dtype) for p in primals]
        terms = []
        for k in range(order):
            if all(type(s[k]) is Zero for s in series):
                terms.append([Zero.from_primal_value(o) for o in outs])
                continue
            args = [instantiate(s[k]) if v else p for p, s, v in zip(primals, series, varying)]
            t = primitive.bind(*args, **{**params, **term_params})
            terms.append(list(t) if primitive.multiple_results else [t])
        series_out = [list(col) for col in zip(*terms)] if terms else [[] for _ in outs]
        return out, series_out if primitive.multiple_results else series_out[0]

    return rule


def deflinear(primitive: core.Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all its inputs: its JVP applies it to the tangents.

    ``transpose_rule(ct, *args, **params)`` returns one cotangent per input (``ct`` a list, one a
    result, for a primitive of several results, such as ``unstack`` and ``split``).
    """

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            if primitive.multiple_results:
                return out, [Zero.from_primal_value(o) for o in out]
            return out, Zero.from_primal_value(out)
        return out, primitive.bind(*map(instantiate, tangents), **params)

    def transpose(ct, *args, **params):
        # (a primitive of several results gets one cotangent a result: all of them zero is zero)
        if all(type(c) is Zero for c in (ct if primitive.multiple_results else [ct])):
            return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
        return transpose_rule(ct, *args, **params)

    primitive.def_traits(linear=True)
    primitive.def_jvp(jvp)
    primitive.def_transpose(transpose)
    primitive.def_taylor(linear_taylor(primitive))


# ----------------------------------------------------------------------------------------------
# Forward mode


_primal_and_tangent = operator.attrgetter("primal", "tangent")


class JVPTracer(core.PrimalTracer):
    __slots__ = ("tangent",)

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        self._aval = None

    def _jax_repr(self):  # (Tracer.__repr__)
        return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"


class JVPTrace(core.Trace):
    """Forward mode: each tracer carries a primal and a tangent (see NOTE: [current trace])."""

    checks_leaks = False  # (as JAX's grad: NOTE: [leak checking])

    def process_primitive(self, primitive, args, params):
        primals, tangents, nonzero = self.unpack(args, JVPTracer, _primal_and_tangent)
        # The rule's work happens on the parent trace (NOTE: [current trace]); an inlined
        # save/restore is cheaper than a context manager on this hot path.
        state = core._state
        prev = state.trace
        parent = state.trace = self.parent
        try:
            if not nonzero:
                # No tangent: the parent processes it (what ``bind`` would do, without re-packing
                # the arguments and parameters).
                return parent.process_primitive(primitive, primals, params)
            tangents = [Zero.from_primal_value(p) if t is None else t for p, t in zip(primals, tangents)]
            rule = primitive.jvp
            if rule is None:
                # Only tangents of integer or boolean inputs (float0: zero by definition, though
                # materialised by a call's JVP): the outputs' tangents are zero, no rule needed,
                # as JAX's symbolic zeros let it skip the rule (equinox's unvmap_max in diffrax).
                if all(type(t) is Zero or t.aval.dtype == _dt.float0 for t in tangents):
                    return parent.process_primitive(primitive, primals, params)
                raise NotImplementedError(
                    f"Differentiation rule for '{primitive.name}' not implemented (forward mode)"
                    f"{_used_at(user_source_info())}."
                )
            out, out_tangent = rule(primals, tangents, **params)
        finally:
            state.trace = prev
        if primitive.multiple_results:
            return [self.lift(p, t) for p, t in zip(out, out_tangent)]
        return self.lift(out, out_tangent)

    def lift(self, primal, tangent):
        if type(tangent) is Zero or _is_float0(tangent):
            return primal
        return JVPTracer(self, primal, tangent)

    def describe(self):
        return "a forward-mode derivative (jvp)"


# NOTE: [primals as the caller gave them]
# JAX's JVP tracers carry the caller's primal objects: a Python float given to ``jvp`` reaches a
# ``custom_jvp`` rule, or a user primitive's JVP rule, as that float, and a rule that returns it
# returns a float. funcgrad canonicalises Python scalars to weak Arrays at the API (rules never
# see bare numbers), so the API records, while it runs (``given_primals``), which Array stands for
# which object the caller gave; the boundaries to user code (``as_given``: custom rules, user
# rules registered through ``funcgrad.interpreters.ad``) and the API's results map them back.


class _Given(threading.local):
    def __init__(self):
        self.map = None  # id(canonical Array) -> (that Array, the caller's object), in a scope


_given = _Given()


@contextlib.contextmanager
def given_primals(canonical: Sequence[Any], given: Sequence[Any]):
    """While the block runs, ``as_given`` maps each of ``canonical`` that differs from its
    counterpart in ``given`` back to it (NOTE: [primals as the caller gave them])."""
    prev = _given.map
    m = dict(prev) if prev else {}
    m.update((id(c), (c, g)) for c, g in zip(canonical, given) if c is not g)
    _given.map = m
    try:
        yield
    finally:
        _given.map = prev


def as_given(x):
    """The caller's own object that the canonical primal ``x`` stands for, else ``x``.

    >>> import numpy as np
    >>> from funcgrad.kernel.array import Array
    >>> a = Array._from_owned(np.asarray(2.0), weak_type=True)
    >>> with given_primals([a], [2.0]):
    ...     type(as_given(a)).__name__
    'float'
    """
    m = _given.map
    if not m:
        return x
    hit = m.get(id(x))
    return hit[1] if hit is not None and hit[0] is x else x


def jvp_flat(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """``f`` maps a list of arrays to a list of arrays; tangents may be ``Zero``."""
    with core.new_trace(JVPTrace) as trace:
        args = [
            p if type(t) is Zero or _is_float0(t) else JVPTracer(trace, p, t)
            for p, t in zip(primals, tangents)
        ]
        return _unpack_jvp_outputs(trace, f(*args))


def _is_float0(t) -> bool:
    # NOTE: [float0 tangents are zeros]: a float0 tangent (of an integer or boolean value, which a
    # call's JVP or a loop's fixed point may materialise) never enters arithmetic: as JAX's
    # ``maybe_jvp_tracer``, the JVP trace carries no tracer for it, so no rule multiplies it.
    return core.get_aval(t).dtype == _dt.float0


def _unpack_jvp_outputs(trace: JVPTrace, outs) -> tuple[list, list]:
    """Split the outputs of a function run on ``trace`` into primals and tangents (``Zero`` for
    outputs that are not ``trace``'s tracers)."""
    primals, tangents, _ = trace.unpack(outs, JVPTracer, _primal_and_tangent)
    return primals, [Zero.from_primal_value(p) if t is None else t for p, t in zip(primals, tangents)]


# ----------------------------------------------------------------------------------------------
# Linearize


class LinearFunction:
    """A linear jaxpr from tangents to output tangents, with its residuals as constants.

    ``out_zeros[i]`` is True when output ``i`` does not depend on the inputs (its tangent is a
    symbolic zero and its cotangent is dropped).
    """

    __slots__ = ("closed", "in_avals", "out_avals", "out_zeros")

    def __init__(self, closed: ClosedJaxpr, in_avals, out_avals, out_zeros):
        self.closed = closed
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.out_zeros = out_zeros

    def __call__(self, *tangents):
        outs = core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *tangents)
        return [Zero(a) if z else o for o, a, z in zip(outs, self.out_avals, self.out_zeros)]

    def transpose(self, cotangents: Sequence[Any]) -> list:
        cts = [Zero(a) if z else ct for ct, a, z in zip(cotangents, self.out_avals, self.out_zeros)]
        undefined = [UndefinedPrimal(a) for a in self.in_avals]
        return backward_pass(self.closed.jaxpr, self.closed.consts, undefined, cts)

    @property
    def residuals(self) -> list:
        return self.closed.consts


# NOTE: [transpose conventions]
# A context may give the transpose of a vjp taken inside it another meaning: inside a checked
# shard_map body, a vjp is the transpose of the *logical* function (NOTE: [gradients inside
# shard_map], funcgrad/_vma.py). Such a context pushes its rule while it traces its body
# (``with transpose_convention(rule)``; ``None`` shadows an outer rule); ``rule(lin, primals,
# outputs)`` returns the ``LinearFunction`` that ``vjp`` transposes: ``lin`` itself, or one whose
# ``transpose`` adjusts the cotangents. ``vjp`` asks ``in_context``; neither it nor the kernel
# names a context.


class _Conventions(threading.local):
    def __init__(self):
        self.stack: list = []


_conventions = _Conventions()


@contextlib.contextmanager
def transpose_convention(rule: Callable | None):
    """Make ``rule`` the transpose convention of ``vjp`` while the block runs (NOTE: [transpose
    conventions])."""
    _conventions.stack.append(rule)
    try:
        yield
    finally:
        _conventions.stack.pop()


def in_context(lin: LinearFunction, primals: Sequence[Any], outputs: Sequence[Any]) -> LinearFunction:
    """The linear function a vjp of ``outputs`` with respect to ``primals`` transposes under the
    innermost transpose convention (NOTE: [transpose conventions]): ``lin`` when there is none.

    >>> lin = linearize_flat(lambda x: [x * 2.0], [1.0])[1]
    >>> in_context(lin, [1.0], [2.0]) is lin
    True
    """
    stack = _conventions.stack
    rule = stack[-1] if stack else None
    return lin if rule is None else rule(lin, primals, outputs)


def linearize_flat(f: Callable, primals: Sequence[Any]) -> tuple[list, LinearFunction]:
    """Primal outputs now, and the linear map of tangents (a staged jaxpr) for later."""
    in_avals = [tangent_aval(core.get_aval(p)) for p in primals]
    with core.new_trace(PartialEvalTrace, JaxprBuilder(arrays_as_consts=True), "linearize") as pe:
        tangent_args = [pe.new_arg(a) for a in in_avals]
        with core.new_trace(JVPTrace) as jt:
            # (an integer or boolean input, of a float0 tangent, enters as its primal: NOTE:
            # [float0 tangents are zeros]; vjp(f, x, n) of an int n with n * n in f multiplied it)
            args = [
                p if a.dtype == _dt.float0 else JVPTracer(jt, p, t)
                for p, t, a in zip(primals, tangent_args, in_avals)
            ]
            out_primals, out_tangents = _unpack_jvp_outputs(jt, f(*args))
        if any(pe.is_unknown(p) for p in out_primals):
            # A JVP rule computed a primal output from tangents (a generic reduce_window's joint
            # reduction of pairs, as JAX's): it cannot be transposed, and JAX says so here.
            raise ValueError(
                "Linearization failed to produce known values for all output primals. This is "
                "typically caused by attempting to differentiate a function uses an operation that "
                "does not support reverse-mode autodiff."
            )
        out_zeros = [type(t) is Zero or not pe.is_unknown(t) for t in out_tangents]
        out_avals = [tangent_aval(core.get_aval(p)) for p in out_primals]
        # Outputs whose tangent is zero (or does not depend on the inputs) are left out of the jaxpr.
        live = [t for t, z in zip(out_tangents, out_zeros) if not z]
        closed = pe.builder.build(pe, tangent_args, live)
    # Re-expand: the jaxpr returns only the live outputs; the LinearFunction fills in zeros.
    closed = _expand_outputs(closed, out_zeros, out_avals)
    return out_primals, LinearFunction(closed, in_avals, out_avals, out_zeros)


# NOTE: [vjp residuals]
# A vjp function is a pytree whose leaves are its residuals (funcgrad/_autodiff.py), and JAX's
# gradient-checkpointing tutorial prints the backward program over them: as in JAX, every value
# the linear program reads is a residual, 0-d Arrays included (linearize's builder keeps them as
# constants, not literals), except a primal given as a Python scalar, which JAX's bind makes a
# literal (``literal_primals``); the residuals that are primal inputs come first, in the inputs'
# order, the others after them in the order the linear program first reads them (JAX's ``VJP``:
# the primal arguments it keeps, then its opaque residuals).


def primals_first(lin: LinearFunction, primals: Sequence[Any]) -> LinearFunction:
    """``lin`` with its residuals reordered: the primal inputs it keeps first, in their order
    (NOTE: [vjp residuals]).

    >>> import numpy as np
    >>> import funcgrad.numpy  # (installs the Array operators)
    >>> from funcgrad.kernel.array import Array
    >>> x, w = Array._from_owned(np.ones(2)), Array._from_owned(np.full(2, 3.0))
    >>> lin = linearize_flat(lambda a, b: [a * b], [x, w])[1]
    >>> [r is w for r in lin.residuals]  # first read by the linear program: w (dx * w), then x
    [True, False]
    >>> res = primals_first(lin, [x, w]).residuals
    >>> [r is x for r in res], [r is w for r in res]
    ([True, False], [False, True])
    """
    consts = lin.closed.consts
    position = {}
    for i, p in enumerate(primals):
        position.setdefault(id(p), i)
    n = len(primals)
    order = sorted(range(len(consts)), key=lambda k: position.get(id(consts[k]), n + k))
    if order == list(range(len(consts))):
        return lin
    j = lin.closed.jaxpr
    closed = ClosedJaxpr(
        Jaxpr([j.constvars[k] for k in order], j.invars, j.eqns, j.outvars), [consts[k] for k in order]
    )
    return LinearFunction(closed, lin.in_avals, lin.out_avals, lin.out_zeros)


def literal_primals(lin: LinearFunction, primals: Sequence[Any], scalars: Sequence[Any]) -> LinearFunction:
    """``lin`` with each residual that is a primal given as a Python scalar (``scalars[i]``: that
    scalar, or None) read as a literal instead (NOTE: [vjp residuals]: JAX's vjp at ``3.0`` keeps
    no residual for it; its backward program reads ``3.0:f32[]``).

    >>> import numpy as np
    >>> import funcgrad.numpy  # (installs the Array operators)
    >>> from funcgrad.kernel.array import Array
    >>> x = Array._from_owned(np.float64(3.0), True)
    >>> lin = linearize_flat(lambda a: [a * a], [x])[1]
    >>> len(lin.residuals), len(literal_primals(lin, [x], [3.0]).residuals)
    (1, 0)
    """
    consts = lin.closed.consts
    scalar_of = {id(p): v for p, v in zip(primals, scalars) if v is not None}
    j = lin.closed.jaxpr
    literal = {
        # (a NumPy scalar of its dtype: interpreted, a weakly typed literal reads as a weak Array)
        v: Literal(np.asarray(scalar_of[id(c)], v.aval.dtype)[()], v.aval)
        for v, c in zip(j.constvars, consts)
        if id(c) in scalar_of and v not in j.outvars
    }
    if not literal:
        return lin
    eqns = [e._replace(invars=[literal.get(a, a) if type(a) is Var else a for a in e.invars]) for e in j.eqns]
    kept = [(v, c) for v, c in zip(j.constvars, consts) if v not in literal]
    closed = ClosedJaxpr(Jaxpr([v for v, _ in kept], j.invars, eqns, j.outvars), [c for _, c in kept])
    return LinearFunction(closed, lin.in_avals, lin.out_avals, lin.out_zeros)


def _expand_outputs(closed: ClosedJaxpr, out_zeros, out_avals) -> ClosedJaxpr:
    """Give the jaxpr one output per primal output; zero outputs read a zero literal placeholder
    that ``LinearFunction`` replaces with ``Zero`` (it is never evaluated as an array)."""
    j = closed.jaxpr
    it = iter(j.outvars)
    outvars = [Literal(0.0, a) if z else next(it) for z, a in zip(out_zeros, out_avals)]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns, outvars), closed.consts)


# ----------------------------------------------------------------------------------------------
# Transposition


def backward_pass(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], cotangents: Sequence[Any], integer: bool = False
):
    """Transpose ``jaxpr`` with respect to its ``UndefinedPrimal`` inputs (``integer``: a linear
    function of integers, ``linear_transpose``'s integer -> integer case, whose cotangents are
    integers rather than float0 zeros).

    Non-linear equations (those reading no linear variable) are evaluated forward first; linear
    ones are transposed in reverse order. Returns one cotangent per input (``Zero`` if none).
    Equations staged meanwhile inherit the source line of the equation being transposed (NOTE:
    [source info of re-interpreted equations]).
    """
    config = source_info_config
    prev = config.override
    config.backward_depth += 1
    try:
        return _backward_pass(jaxpr, consts, args, cotangents, config, prev, integer)
    finally:
        config.override = prev
        config.backward_depth -= 1


def _backward_pass(jaxpr, consts, args, cotangents, config, prev, integer=False):
    primal_env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    primal_env.update((v, a) for v, a in zip(jaxpr.invars, args) if not is_undefined_primal(a))

    def read_primal(a):
        if type(a) is Literal:
            return core.literal_value(a)
        if a in linear:
            return UndefinedPrimal(a.aval)
        return primal_env[a]

    seeds = [v for v, a in zip(jaxpr.invars, args) if is_undefined_primal(a)]
    linear, reads_linear = ir.forward_dependents(jaxpr, seeds, per_operand=False)
    linear_eqns = []
    for eqn, is_linear in zip(jaxpr.eqns, reads_linear):
        if is_linear:
            linear_eqns.append(eqn)
        else:
            config.override = eqn.source_info or prev
            outs = eqn.primitive.bind(*[read_primal(a) for a in eqn.invars], **eqn.params)
            if eqn.primitive.multiple_results:
                primal_env.update(zip(eqn.outvars, outs))
            else:
                primal_env[eqn.outvars[0]] = outs

    ct_env: dict[Var, Any] = {}

    def write_ct(v, ct):
        # (a float0 cotangent, of an integer or boolean value, is a zero: kept symbolic, so user
        # transpose rules see ad.Zero there as in JAX; equinox's nondifferentiable_backward)
        if (
            type(v) is Var
            and type(ct) is not Zero
            and ct is not None
            and (integer or _dt.is_inexact(v.aval.dtype))
        ):
            if v.aval._sharding is not None:
                # NOTE: [sharding in types]: a cotangent is typed as its primal, as JAX's
                # transpose rules type theirs (``x + y``'s cotangent of a replicated x is
                # replicated, though the sum was sharded along y's axes).
                ct = hooks.typed_as(ct, v.aval)
            prev = ct_env.get(v)
            ct_env[v] = ct if prev is None else hooks.add_any(prev, ct)

    for v, ct in zip(jaxpr.outvars, cotangents):
        if type(v) is Var and v in linear:
            write_ct(v, ct)

    for eqn in reversed(linear_eqns):
        outvars = eqn.outvars
        # A user's bwd (custom_lin) runs even when no cotangent reaches it, as in JAX: it need not
        # be linear in them (flax's fp8 layers pass their scaling state back through it).
        user_rule = eqn.primitive.traits.transposes_zero_cotangents
        if len(outvars) == 1:
            ct = ct_env.pop(outvars[0], None)
            if ct is None:
                if not user_rule:
                    continue
                ct = Zero(outvars[0].aval)
            cts_out = [ct]
        else:
            cts_out = [ct_env.pop(v, None) for v in outvars]
            if all(ct is None for ct in cts_out) and not user_rule:  # (not list.count: arrays' ==)
                continue
            cts_out = [Zero(v.aval) if ct is None else ct for v, ct in zip(outvars, cts_out)]
        rule = eqn.primitive.transpose
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' "
                "not implemented: it appeared in a linear (tangent) program, which means its "
                f"JVP rule used it on tangents without the primitive being declared linear"
                f"{_used_at(eqn.source_info)}."
            )
        in_args = [read_primal(a) for a in eqn.invars]
        config.override = eqn.source_info or prev
        ct_arg = cts_out if eqn.primitive.multiple_results else cts_out[0]
        cts_in = rule(ct_arg, *in_args, **eqn.params)
        for a, ct in zip(eqn.invars, cts_in):
            if type(a) is Var and a in linear:
                write_ct(a, ct)

    return [
        ct_env.get(v, Zero(v.aval)) if is_undefined_primal(a) else None for v, a in zip(jaxpr.invars, args)
    ]


def _used_at(info) -> str:
    # Error messages name the user's line that used the primitive (when it was recorded).
    return f" (used at {info})" if info is not None else ""


# ----------------------------------------------------------------------------------------------
# Jaxpr-level transformations used by higher-order primitives (jit, cond, scan, ...)


def jvp_jaxpr(
    closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate: bool | Sequence[bool]
) -> tuple[ClosedJaxpr, list[bool]]:
    """A jaxpr computing ``(primals_out..., nonzero tangents_out...)`` from
    ``(primals_in..., nonzero tangents_in...)``; returns it and which output tangents are nonzero."""
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    in_avals = closed.in_avals
    tan_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    out_nonzeros_box: list = []

    def traced(*args):
        primals, tangents = args[: len(in_avals)], iter(args[len(in_avals) :])
        tans = [next(tangents) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        outs_p, outs_t = jvp_flat(
            lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tans
        )
        nz_out = [type(t) is not Zero or inst for t, inst in zip(outs_t, instantiate)]
        out_nonzeros_box.append(nz_out)
        # (`instantiate` is the parameter here, so materialise zeros directly.)
        return [
            *outs_p,
            *[hooks.zeros(t.aval) if type(t) is Zero else t for t, nz in zip(outs_t, nz_out) if nz],
        ]

    closed_jvp = trace_to_jaxpr(traced, [*in_avals, *tan_avals])
    return closed_jvp, out_nonzeros_box[0]


def transpose_jaxpr(
    closed: ClosedJaxpr,
    linear: Sequence[bool],
    ct_zero: Sequence[bool] | None = None,
    ct_weak: Sequence[bool] | None = None,
) -> ClosedJaxpr:
    """A jaxpr ``(non-linear inputs..., nonzero output cotangents...) -> cotangents of the linear
    inputs`` (zeros instantiated). Outputs marked in ``ct_zero`` have a symbolic-zero cotangent and
    take no input (default: every cotangent is an input). ``ct_weak`` gives the weak types of the
    nonzero cotangents the caller has (default: the outputs'): JAX traces a transposed call on the
    cotangents it gets, so a strong cotangent of a weak output makes strong cotangents."""
    return _transpose_jaxpr(closed, linear, ct_zero, ct_weak, False)[0]


def transpose_jaxpr_with_state(
    closed: ClosedJaxpr,
    linear: Sequence[bool],
    ct_zero: Sequence[bool] | None = None,
    ct_weak: Sequence[bool] | None = None,
) -> tuple[ClosedJaxpr, list]:
    """``transpose_jaxpr`` for a backward pass that may write Refs from outside (NOTE: [state
    written by a backward pass] in kernel/held_state.py): returns the jaxpr and the state objects
    it touched, ``items``; when there are any, the jaxpr takes their leaves (``WrittenState``) after
    its own inputs and gives their final leaves after its own outputs."""
    return _transpose_jaxpr(closed, linear, ct_zero, ct_weak, True)


def transpose_jaxpr_nonzero(
    closed: ClosedJaxpr,
    linear: Sequence[bool],
    ct_zero: Sequence[bool] | None = None,
    ct_weak: Sequence[bool] | None = None,
) -> tuple[ClosedJaxpr, list, tuple]:
    """``transpose_jaxpr_with_state`` whose jaxpr gives only the linear inputs' cotangents that are
    not symbolic zeros; also returns which (one flag per linear input). A call's transpose then
    hands back ``Zero`` for an input the body never makes linear use of, as JAX's jit transpose
    (its accumulators stay ``Zero``): ``grad(lambda x: jit(lambda a, b: a)(x, cos(x)))(inf)`` is 1,
    not ``0 * -sin(inf)`` = NaN."""
    nonzero: list = []
    transposed, items = _transpose_jaxpr(closed, linear, ct_zero, ct_weak, True, nonzero)
    return transposed, items, tuple(nonzero)


def _transpose_jaxpr(
    closed, linear, ct_zero, ct_weak, with_state: bool, nonzero: list | None = None
) -> tuple[ClosedJaxpr, list]:
    """The above; ``with_state``: through the surface's discovery scope; ``nonzero``: a list to
    fill with the linear inputs' nonzero flags, whose zeros are then left out of the outputs."""
    in_avals, out_avals = closed.in_avals, closed.out_avals
    ct_zero = [False] * len(out_avals) if ct_zero is None else list(ct_zero)
    nonlin_avals = [a for a, lin in zip(in_avals, linear) if not lin]
    ct_avals = [ct_aval(a) for a, z in zip(out_avals, ct_zero) if not z]
    if ct_weak is not None:
        ct_avals = [a.update(weak_type=bool(w)) for a, w in zip(ct_avals, ct_weak)]

    def backward(*args):
        nonlin, cts = iter(args[: len(nonlin_avals)]), iter(args[len(nonlin_avals) :])
        primals = [UndefinedPrimal(a) if lin else next(nonlin) for a, lin in zip(in_avals, linear)]
        cts_out = [Zero(ct_aval(a)) if z else next(cts) for a, z in zip(out_avals, ct_zero)]
        cts_in = backward_pass(closed.jaxpr, closed.consts, primals, cts_out)
        lin_cts = [ct for ct, lin in zip(cts_in, linear) if lin]
        if nonzero is None:
            return [instantiate(ct) for ct in lin_cts]
        nonzero[:] = [type(ct) is not Zero for ct in lin_cts]
        return [ct for ct in lin_cts if type(ct) is not Zero]

    discover = hooks.state_discovery if with_state else None
    if discover is None:
        return trace_to_jaxpr(backward, [*nonlin_avals, *ct_avals]), []
    found = []

    def traced(*args):
        with discover() as discovery:
            outs = backward(*args)
            if not discovery.items():
                return outs
            finals = discovery.finals(boxes=True)
            if finals is None:
                raise NotImplementedError("a traced backward pass that changes a mutable box's structure")
            found.append(discovery)
            return [*outs, *finals]

    transposed = trace_to_jaxpr(traced, [*nonlin_avals, *ct_avals])
    if not found:
        return transposed, []
    return found[0].completed(transposed), found[0].items()


def dce(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr, consts = dce_jaxpr_consts(closed.jaxpr, closed.consts)
    return ClosedJaxpr(jaxpr, consts)
