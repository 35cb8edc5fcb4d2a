"""Staging and partial evaluation: building jaxprs from traced Python.

Layer: kernel. Imports ``core``, ``ir`` and ``array``.

Two traces share one jaxpr builder:

- ``StagingTrace`` records *every* primitive into a jaxpr (``make_jaxpr``, ``jit``). Values from
  outside (NumPy arrays, Arrays, tracers of enclosing traces) become constvars; Python and NumPy
  scalars, and 0-d constants made while this trace stages, become literals (NOTE: [constants made
  while tracing]).
- ``PartialEvalTrace`` is the same builder with one difference: a primitive whose inputs are all
  *known* (not this trace's tracers) is bound on the parent trace right now. Under ``linearize``,
  the primal work of the JVP therefore runs eagerly, and only the tangent work (linear in the
  unknown tangents) is staged; the known values it reads become the jaxpr's constants — the
  *residuals*, PyTorch's ``ctx.save_for_backward``.

# NOTE: [residuals are constvars]
# The linear jaxpr made by ``linearize`` has the residuals as its constvars and the tangents as its
# invars. ``vjp`` transposes it; ``memory_report`` reads the constvars. When linearize runs inside
# another transformation, residuals are tracers of that outer transformation, so the backward pass
# is itself differentiated: that is how ``grad(grad(f))`` works.

# NOTE: [source info of re-interpreted equations]
# Each staged equation records the user's line (``user_source_info``: the innermost frame outside
# the library). When a transformation re-interprets an existing equation (``backward_pass``
# transposing it, ``core.eval_jaxpr`` inside ``partial_eval_jaxpr``/``jvp_jaxpr``), the
# Python stack no longer shows the user's line, so the interpreter puts the equation's
# ``source_info`` in ``source_info_config.override`` and every equation staged meanwhile inherits
# it: the backward program's equations point at the forward line they differentiate. The override
# is one attribute store per equation; the stack walk happens only when an equation is staged.

# NOTE: [constants made while tracing]
# JAX 0.10 stages a concrete ``jax.Array`` as a constvar, never a literal, while a constant made
# *during* the trace (``x * 2.0``, ``jnp.asarray(0)``, ``jnp.zeros(())`` inside ``jit``) is lifted
# into the trace (omnistaging: ``lax.stage``) and prints as a literal. funcgrad's surface makes such
# constants eagerly, as Arrays, so it tells them apart by where they were made: every 0-d Array
# made through ``Array(...)`` or ``Array._from_owned`` passes through ``trace_constant``
# (``hooks.note_constant``; the eval trace's own results use ``_from_owned_raw`` and skip it),
# which notes it in the builder of the innermost trace that stages a jaxpr (a linearize trace
# computes known values now, so it is skipped, as JAX's binds them on the parent). ``to_atom``
# makes a literal of a 0-d Array only when its own builder noted it; any other Array is a
# constvar -- one made before the trace, or made in an enclosing trace and closed over by an inner
# one (equinox's closure_convert counts those constants, as optimistix's LBFGS compares two
# operators' closures).

# NOTE: [constants a trace made]
# Eager loops at the top pass the arrays their bodies close over as operands, as JAX's do
# (``body_nconsts``; NOTE: [eager loops keep only what their trace made] in
# funcgrad/_control_flow.py), but keep as constants of the program the arrays the trace itself
# computed from no inputs, where JAX stages an equation XLA folds (``jnp.arange``'s ``iota``):
# funcgrad's surface computes those with NumPy while tracing. Such an array is made by
# ``Array._from_owned`` (a computed value; a conversion of an existing value goes through
# ``Array(...)``), which passes it to ``trace_constant``: every enclosing trace staging a jaxpr
# notes it in its builder's ``made`` (held, so no id is reused), up to ``MADE_CONSTANT_ELEMENTS``
# elements (larger ones stay operands, as the lowering passes large constants as arguments);
# ``trace_to_jaxpr(made=...)`` reports which constants of the jaxpr were made so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad.kernel import core, ir
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Tracer, source_info_config, user_source_info
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import (
    _DEVICE,
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapedArray,
    Var,
    abstract_token,
)

# ----------------------------------------------------------------------------------------------
# The builder


def typed_outputs(primitive, avals, out, params):
    """``out``, the abstract results of ``primitive`` on ``avals``, with their shardings on
    explicit mesh axes (NOTE: [sharding in types]): an explicitly sharded operand types the
    results too; inside a checked shard_map body, the manual axes they vary along (NOTE: [varying
    axes in staged types]). Every trace that types equations (staging, eager grad's recording)
    asks here."""
    if hooks.apply_sharding is not None:
        if primitive.sharding_from_params or any(a._sharding is not None for a in avals):
            out = hooks.apply_sharding(primitive, avals, out, params)
    if hooks.apply_vma is not None:  # (only while a checked shard_map body is staged)
        out = hooks.apply_vma(primitive, avals, out, params)
    return out


class StagingTracer(Tracer):
    __slots__ = ("_aval", "_var")

    def __init__(self, trace, aval: ShapedArray, var: Var):
        self._trace = trace
        self._aval = aval
        self._var = var

    @property
    def aval(self):
        return self._aval

    def _jax_repr(self):  # (Tracer.__repr__)
        return f"JitTracer({self._aval})"


def _check_int_fits(x: int, dtype) -> None:
    # A Python int staged as a constant of the default integer type (a closure's value, a returned
    # int): JAX's OverflowError where it does not fit (the constant had wrapped around).
    info = np.iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")


def _is_literal_value(x) -> bool:
    """Python and NumPy scalars (and 0-d NumPy arrays); an Array only as noted by its builder."""
    t = type(x)
    if t in python_scalar_types:
        return True
    return isinstance(x, np.generic) or (t is np.ndarray and x.ndim == 0)


# Arrays up to this many elements made while tracing are noted as made (NOTE: [constants a trace
# made]); the lowering's ``HOIST_CONST_ELEMENTS``, above which a constant is passed as an argument.
MADE_CONSTANT_ELEMENTS = 4096


def trace_constant(x):
    """Note ``x``, an Array just made, as made by the traces staging a jaxpr: a 0-d one is staged
    as a literal by the innermost (NOTE: [constants made while tracing]; every 0-d Array comes
    here, ``hooks.note_constant``), a computed one (``Array._from_owned``) is noted as made by each
    (NOTE: [constants a trace made]); returns ``x``. Outside a staging trace it is a plain Array.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> funcgrad.make_jaxpr(lambda x: x + fnp.asarray(2.0))(1.0)
    { lambda ; a:f64[]. let b:f64[] = add a 2.0:f64[] in (b,) }
    """
    trace = core._state.trace
    if trace.parent is None:  # (eager: nothing stages)
        return x
    scalar, innermost = x.ndim == 0, True
    if not scalar and x.size > MADE_CONSTANT_ELEMENTS:
        return x
    while trace.parent is not None:
        if isinstance(trace, StagingTrace) and type(trace) is not PartialEvalTrace:
            if scalar and innermost:
                trace.builder.literals[id(x)] = x
            innermost = False
            trace.builder.made[id(x)] = x
        trace = trace.parent
    return x


class JaxprBuilder:
    """Accumulates equations, constants and input variables for one jaxpr."""

    def __init__(self, arrays_as_consts: bool = False):
        # ``arrays_as_consts``: a concrete 0-d Array is a constant, not a literal -- linearize's
        # residuals, which a vjp function's pytree leaves hold as JAX's does (NOTE: [vjp residuals]).
        self.arrays_as_consts = arrays_as_consts
        # The 0-d constants made while this jaxpr was staged, by id (held, so no id is reused):
        # literals (NOTE: [constants made while tracing]).
        self.literals: dict[int, Array] = {}
        # The Arrays made while this jaxpr (or one inside it) was staged, by id (held): NOTE:
        # [constants a trace made].
        self.made: dict[int, Array] = {}
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.const_vars: dict[int, Var] = {}
        self.const_vals: list[Any] = []
        self.const_list: list[Var] = []
        self.arg_names: dict[Var, str] = {}

    def new_arg(self, trace, aval: ShapedArray, name: str | None = None) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        if name is not None:
            self.arg_names[var] = name
        return StagingTracer(trace, aval, var)

    def const_var(self, val) -> Var:
        var = self.const_vars.get(id(val))
        if var is None:
            var = Var(core.get_aval(val))
            self.const_vars[id(val)] = var
            self.const_vals.append(val)
            self.const_list.append(var)
        return var

    def to_atom(self, trace, x) -> Var | Literal:
        if type(x) is StagingTracer and x._trace is trace:
            return x._var
        if isinstance(x, Tracer):
            core.check_foreign_tracer(trace, x)
            return self.const_var(x)
        if type(x) is Array:
            if self.literals.get(id(x)) is x and not self.arrays_as_consts:
                return Literal(x._numpy()[()], core.get_aval(x))
            return self.const_var(x)
        if _is_literal_value(x):
            aval = core.get_aval(x)
            if type(x) is int and not -(2**31) <= x < 2**31 and aval.dtype.kind in "iu":
                _check_int_fits(x, aval.dtype)
            return Literal(x, aval)
        return self.const_var(x)

    def add_eqn(self, trace, primitive, atoms, params, out_avals, source=True) -> list[StagingTracer]:
        outs = [StagingTracer(trace, a, Var(a)) for a in out_avals]
        info = user_source_info() if source else None
        self.eqns.append(JaxprEqn(primitive, atoms, params, [t._var for t in outs], info))
        return outs

    def build(
        self, trace, in_tracers: Sequence[Tracer], outs: Sequence[Any], dce: bool = True
    ) -> ClosedJaxpr:
        """The closed jaxpr from ``in_tracers`` to ``outs`` (known outputs become constants);
        ``dce``: without the equations nothing reads."""
        outvars = [self.to_atom(trace, o) for o in outs]
        # Literal outputs are allowed in JAX's IR, but keeping outvars as Vars keeps every consumer
        # simple: turn literal outputs into constants.
        outvars = [
            self.const_var(o) if type(a) is Literal and not isinstance(o, Tracer) else a
            for a, o in zip(outvars, outs)
        ]
        invars = [t._var for t in in_tracers]
        jaxpr = Jaxpr(self.const_list, invars, self.eqns, outvars)
        if not dce:
            return ClosedJaxpr(jaxpr, list(self.const_vals))
        jaxpr, consts = dce_jaxpr_consts(jaxpr, self.const_vals)
        return ClosedJaxpr(jaxpr, consts)


# NOTE: [memory space in types]
# As in JAX 0.10, an array's type says which memory holds it (``ShapedArray.memory_space``:
# ``MemorySpace.Device``, the default, or ``Host``, printed ``f32<host>[3]``): an Array in a
# ``pinned_host`` sharding is typed ``Host`` (kernel/array.py), a staged equation's results are in
# its operands' memory (``memory_space_rule``: JAX's default rule; operands of different memories
# are an error, 0-d operands go anywhere), and a primitive whose parameters say where its results
# go (``memory_space_from_params``: ``device_put`` to a ``memory.Space``) or whose inner jaxpr
# typed them (jit, control flow, checkpoint) keeps its own answer. The memory is part of the type:
# it is printed, compared and hashed (a jitted function compiles once per memory of its inputs).


def _abstract_eval_result_error(primitive) -> ValueError:
    """JAX's error for an abstract evaluation rule returning a sequence for a primitive with one
    result, or not one for a primitive with several (a user's ``def_abstract_eval``)."""
    return ValueError(
        f"{primitive}.abstract_eval() method should return a tuple or a list iff "
        f"{primitive}.multiple_results."
    )


def memory_space_rule(primitive, avals, out, params):
    """``out`` (the abstract value(s) of ``primitive`` on ``avals``) in the memory of its
    operands, as JAX's default memory-space rule (NOTE: [memory space in types])."""
    if primitive.memory_space_from_params or any(isinstance(v, Jaxpr | ClosedJaxpr) for v in params.values()):
        return out
    spaces = [getattr(a, "memory_space", _DEVICE) for a in avals]
    if all(m is ir.MemorySpace.Any for m in spaces):
        space = ir.MemorySpace.Any
    else:
        space, first = _DEVICE, None
        for a, m in zip(avals, spaces):
            if not a.ndim:
                continue
            if first is not None and m is not space:
                raise ValueError(
                    f"memory_space of all inputs passed to `{primitive.name}` must be the same. Got one "
                    f"operand with type: {str(first).lstrip('~')} and another operand with type: "
                    f"{str(a).lstrip('~')}"
                )
            space, first = m, a
    outs = list(out) if primitive.multiple_results else [out]
    outs = [o.update(memory_space=space) if type(o) is ShapedArray else o for o in outs]
    return outs if primitive.multiple_results else outs[0]


class TokenOperandError(TypeError, ValueError):
    """A token passed to a primitive that takes arrays: JAX raises a ValueError from ``lax``'s
    primitives and a TypeError from ``jax.numpy``'s argument checks; this is both."""


def _check_token_operand(primitive) -> None:
    """A token operand reaches no primitive of the catalog but those that take tokens (NOTE:
    [tokens]); any other would misread the token as an array (JAX's words). A user's primitive
    may take one, as in JAX."""
    t = primitive.traits
    if primitive in hooks.catalog and not (t.takes_tokens or t.jaxpr_params):
        raise TokenOperandError(
            f"Attempting to pass an unexpected type AbstractToken() to a primitive: {primitive.name}. "
            "A token (lax.create_token) only orders effects: merge tokens with lax.after_all, or "
            "pass them through jit and control flow."
        )


class StagingTrace(core.Trace):
    """Stages every primitive into ``builder`` (used by ``make_jaxpr`` and ``jit``)."""

    def __init__(self, parent, builder: JaxprBuilder | None = None, description: str = ""):
        super().__init__(parent)
        self.builder = builder or JaxprBuilder()
        self.description = description

    def new_arg(self, aval, name=None):
        return self.builder.new_arg(self, aval, name)

    def process_primitive(self, primitive, args, params):
        return self.stage(primitive, args, params)

    record_source = True

    def stage(self, primitive, args, params):
        atoms = [self.builder.to_atom(self, a) for a in args]
        avals = [a.aval for a in atoms]
        for a in avals:
            if a is abstract_token:  # NOTE: [tokens]: only the token and call primitives take one
                _check_token_operand(primitive)
        rule = primitive.abstract_eval
        if rule is None:
            raise NotImplementedError(
                f"Abstract evaluation for '{primitive.name}' not implemented: it can run eagerly, "
                "but staging it (jit, make_jaxpr, control flow, reverse mode) needs its output "
                "shapes and dtypes: declare them with def_abstract_eval"
            )
        out = typed_outputs(primitive, avals, rule(*avals, **params), params)
        for a in avals:
            if getattr(a, "memory_space", _DEVICE) is not _DEVICE:  # (rare: a value in host memory)
                out = memory_space_rule(primitive, avals, out, params)
                break
        source = self.record_source or source_info_config.in_linearize
        if primitive.multiple_results:
            if not isinstance(out, tuple | list):
                raise _abstract_eval_result_error(primitive)
            return self.builder.add_eqn(self, primitive, atoms, params, out, source)
        if type(out) is tuple or type(out) is list:
            raise _abstract_eval_result_error(primitive)
        # One result (the common case), inlined: this runs for every staged equation.
        var = Var(out)
        info = user_source_info() if source else None
        self.builder.eqns.append(JaxprEqn(primitive, atoms, params, [var], info))
        return StagingTracer(self, out, var)

    def describe(self) -> str:
        return self.description or "a staged (jit or make_jaxpr) function"

    def describe_origin(self, tracer) -> str:
        """Which named inputs the traced value depends on (for concretization errors)."""
        names = self.builder.arg_names
        if not names:
            return ""
        deps = ir.backward_dependencies(self.builder.eqns, [tracer._var])[0]
        named = [names[v] for v in self.builder.invars if v in deps and v in names]
        if not named:
            return ""
        # (JAX's words: users and JAX's tests grep for them)
        if len(named) == 1:
            args = f"the argument {named[0]}"
        elif len(named) == 2:
            args = f"the arguments {named[0]} and {named[1]}"
        else:
            args = f"the arguments {', '.join(named[:-1])}, and {named[-1]}"
        return (
            "\nThis concrete value was not available in Python because it depends on the "
            f"value{'s' if len(named) > 1 else ''} of {args}."
        )


class PartialEvalTrace(StagingTrace):
    """Runs primitives on known inputs now (on the parent) and stages those touching unknowns."""

    record_source = False
    # (linearize's trace, grad's under jit: unchecked, as JAX checks staging and batching, not
    # grad; a value leaked from it still holds the staging trace's tracer, reported as JAX's
    # DynamicJaxprTrace; NOTE: [leak checking])
    checks_leaks = False
    # Splitting a jaxpr's equations (``partial_eval_jaxpr``) rather than a traced function: a
    # checkpoint met there keeps its known part one equation, as JAX's jaxpr-level rule does.
    of_jaxpr = False

    def __init__(self, parent, builder: JaxprBuilder | None = None, description: str = ""):
        super().__init__(parent, builder, description)
        # Under jit/make_jaxpr tracing is paid once, so the linear equations record their source
        # lines too (the transposed, backward equations inherit them); eager grad skips the cost.
        self.record_source = under_staging(parent)

    def process_primitive(self, primitive, args, params):
        for a in args:
            if type(a) is StagingTracer and a._trace is self:
                rule = primitive.partial_eval
                if rule is not None:
                    unknowns = [type(x) is StagingTracer and x._trace is self for x in args]
                    return rule(self, args, unknowns, **params)
                return self.stage(primitive, args, params)
        return self.process_on_parent(primitive, args, params)  # known: computed now

    def is_unknown(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self


def under_staging(trace) -> bool:
    """Whether ``trace`` is, or runs inside, a trace staging a program (``jit``, ``make_jaxpr``):
    what is computed there ends up in a jaxpr, not in an eager result."""
    while trace is not None:
        if isinstance(trace, StagingTrace) and trace.record_source:
            return True
        trace = trace.parent
    return False


# ----------------------------------------------------------------------------------------------
# Tracing Python to jaxprs


def trace_to_jaxpr(
    f: Callable,
    in_avals: Sequence[ShapedArray],
    arg_names=None,
    description: str = "",
    dce: bool = True,
    made: list | None = None,
) -> ClosedJaxpr:
    """Stage ``f(*args) -> list`` into a closed jaxpr and return it.

    The jaxpr's consts may be tracers of enclosing transformations (closure captures). ``dce=False``
    keeps the equations nothing reads (``make_jaxpr`` shows them, as JAX's does, their results
    printed as ``_``). ``made``: a list that receives, per constant of the jaxpr, whether the
    trace made it (NOTE: [constants a trace made]).
    """
    with core.new_trace(StagingTrace, None, description) as trace:
        names = arg_names or [None] * len(in_avals)
        args = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
        outs = f(*args)
        closed = trace.builder.build(trace, args, outs, dce)
    if made is not None:
        noted = trace.builder.made
        made.extend(noted.get(id(c)) is c for c in closed.consts)
    return closed


def dce_jaxpr_consts(jaxpr: Jaxpr, consts: Sequence[Any]) -> tuple[Jaxpr, list]:
    """Drop equations whose outputs are unused (and constants nothing reads); equations with side
    effects stay."""
    live, kept = ir.backward_dependencies(jaxpr.eqns, jaxpr.outvars, effects=True)
    constvars, new_consts = [], []
    for v, c in zip(jaxpr.constvars, consts):
        if v in live:
            constvars.append(v)
            new_consts.append(c)
    return Jaxpr(constvars, jaxpr.invars, kept, jaxpr.outvars), new_consts


def convert_constvars_jaxpr(closed: ClosedJaxpr) -> tuple[Jaxpr, list]:
    """Move constvars to the front of invars: returns the open jaxpr and the const values."""
    j = closed.jaxpr
    return Jaxpr([], [*j.constvars, *j.invars], j.eqns, j.outvars), closed.consts


def close_over_tracers(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """Split constants into concrete ones (kept) and tracers (to be passed as leading arguments).

    Higher-order primitives must not hide tracers of enclosing transformations inside params, or
    those transformations would not see them; they become explicit inputs instead.
    """
    j = closed.jaxpr
    keep_vars, keep_vals, arg_vars, arg_vals = [], [], [], []
    for v, c in zip(j.constvars, closed.consts):
        if isinstance(c, Tracer):
            arg_vars.append(v)
            arg_vals.append(c)
        else:
            keep_vars.append(v)
            keep_vals.append(c)
    new = Jaxpr(keep_vars, [*arg_vars, *j.invars], j.eqns, j.outvars)
    return ClosedJaxpr(new, keep_vals), arg_vals


# ----------------------------------------------------------------------------------------------
# Partial evaluation of a jaxpr (used by the partial_eval rules of jit, cond, scan, ...)


def partial_eval_jaxpr(
    closed: ClosedJaxpr, unknowns: Sequence[bool], instantiate: bool | Sequence[bool] = False
) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split ``closed`` into a known part and an unknown part.

    Returns ``(known, unknown, out_unknowns, num_res)``:

    - ``known`` takes the known inputs and returns the known outputs followed by ``num_res``
      residuals;
    - ``unknown`` takes the residuals followed by the unknown inputs and returns the unknown
      outputs.

    Implemented by tracing: ``eval_jaxpr`` runs on a ``PartialEvalTrace`` (for the unknown part)
    whose parent is a ``StagingTrace`` (for the known part).
    """
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    in_avals = closed.in_avals
    with core.new_trace(StagingTrace) as known_trace:
        known_args = [known_trace.new_arg(a) for a, uk in zip(in_avals, unknowns) if not uk]
        with core.new_trace(PartialEvalTrace) as pe_trace:
            pe_trace.of_jaxpr = True  # (a call inside keeps its known part one equation: JAX's)
            unknown_args = [pe_trace.new_arg(a) for a, uk in zip(in_avals, unknowns) if uk]
            it_known, it_unknown = iter(known_args), iter(unknown_args)
            args = [next(it_unknown) if uk else next(it_known) for uk in unknowns]
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
            out_unknowns = [pe_trace.is_unknown(o) or inst for o, inst in zip(outs, instantiate)]
            unknown_outs = [o for o, uk in zip(outs, out_unknowns) if uk]
            unknown_closed = pe_trace.builder.build(pe_trace, unknown_args, unknown_outs)
        # Residuals: the unknown jaxpr's constants. Those that are known-trace tracers are
        # outputs of the known jaxpr; concrete ones stay constants of the unknown jaxpr.
        uj = unknown_closed.jaxpr
        res_vars, res_vals, const_vars, const_vals = [], [], [], []
        for v, c in zip(uj.constvars, unknown_closed.consts):
            if isinstance(c, StagingTracer) and c._trace is known_trace:
                res_vars.append(v)
                res_vals.append(c)
            else:
                const_vars.append(v)
                const_vals.append(c)
        unknown = ClosedJaxpr(Jaxpr(const_vars, [*res_vars, *uj.invars], uj.eqns, uj.outvars), const_vals)
        known_outs = [o for o, uk in zip(outs, out_unknowns) if not uk]
        known = known_trace.builder.build(known_trace, known_args, [*known_outs, *res_vals])
    return known, unknown, out_unknowns, len(res_vals)


hooks.note_constant = trace_constant
