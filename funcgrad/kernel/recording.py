"""Recording an eager call as a program, and the cache of programs derived from recordings.

Layer: kernel. Imports ``core``, ``ir``, ``jaxpr_keys``, ``dtypes``, ``partial_eval``, ``callkit``,
``simplify`` and ``numpy_plan`` (the interpreter of the cached programs).

# NOTE: [eager grad program cache]
# An eager ``grad(f)(x)`` runs ``f`` every call -- a Python function may read globals, closures
# and mutable objects that change between calls, so its program cannot be assumed to stay the
# same. What can be reused is everything *derived* from a program: the JVP, the partial
# evaluation, the transpose. So eager ``grad`` (1) runs ``f`` under a ``RecordingTrace``, which
# records the equations that depend on the differentiated inputs (everything else is evaluated
# now, as under the JVP trace), (2) looks the recorded program up by its structure -- primitives,
# parameters, the wiring between equations and the avals of inputs and constants, never the
# constants' values, which are passed as arguments -- and (3) on a hit binds one call of the
# cached value-and-gradient program. Nothing stale can be replayed: ``f`` ran this call, and a
# program equal in structure has, by construction, the same derivative program. Inner ``grad``s
# of ``grad(grad(f))`` record into the outer recording as single call equations of their cached
# programs, so the outer program stays small and its key stable. A parameter that is a jaxpr (the
# body of a ``checkpoint``, ``cond``, ``scan``, traced anew on every call) enters the key by
# structure (``jaxpr_keys.jaxpr_key``: its small constants by value, large ones by identity).
#
# As under the JVP trace, values that cannot carry a derivative are concrete: a recorded
# equation whose results are integers or booleans, or which is not differentiable (comparisons,
# ``floor``, ``stop_gradient``), is evaluated at once (with the recorded equations before it) and
# its results continue as constants -- so ``if x > 0:`` and ``x[x > 0]`` work as before, and the
# value taken enters the cached program as an argument (a different branch records a different
# program). Once the outermost recording has computed values, it computes each later equation as
# it records it, and the cached program then reads those forward values instead of computing them
# again (``given_forward_values``). A program is only cached from its second sighting (the first
# runs the recorded program through the ordinary eager machinery), and never when it calls the
# user's own derivative rules (``custom_jvp``/``custom_vjp``), which must run on every eager call
# (funcgrad's own custom_jvp functions are pure and are cached: NOTE: [library custom_jvp]).
# A recording never evaluates an equation with an effect (a callback, a print, in a loop body or
# not): the derivative program would run it a second time. Needing a concrete value past one
# abandons the recording (``EffectsInRecording``) and ``f`` runs on the ordinary path.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.caches import bounded_put, register_cache
from funcgrad.kernel.callkit import CallPrimitive
from funcgrad.kernel.ir import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    MemorySpace,
    Var,
    has_effects,
    jaxprs_in_params,
)
from funcgrad.kernel.jaxpr_keys import params_key
from funcgrad.kernel.numpy_plan import eager_call_impl
from funcgrad.kernel.partial_eval import StagingTracer, typed_outputs
from funcgrad.kernel.simplify import equation_key, simplify

# ----------------------------------------------------------------------------------------------
# The call primitive of cached eager programs

# Evaluated eagerly, it interprets its jaxpr with the NumPy impls (never compiled: eager results
# are NumPy's); its JVP, partial evaluation and transpose come from the call-primitive kit, whose
# derived programs are memoised per jaxpr object -- the cached program's.
eager_call_p = CallPrimitive("eager_call")
eager_call_p.impl_takes_arrays = True
eager_call_p.def_impl(eager_call_impl)


# ----------------------------------------------------------------------------------------------
# The recording trace


class EffectsInRecording(Exception):
    """A recording needed a concrete value computed after an equation with an effect (a
    ``debug.callback`` in a loop whose integer counter is read): evaluating it would run the
    effect once here and once more in the derivative program, so the caller runs ``f`` on the
    ordinary path instead, where it runs once."""


_new_eqn = tuple.__new__  # a JaxprEqn without its generated __new__'s frame (the replay hot path)


class RecordingTracer(StagingTracer):
    """A value recorded by a ``RecordingTrace``: its aval and the variable of the equation that
    made it (a staging tracer of another trace type: ``StagingTrace`` checks the exact type)."""

    __slots__ = ()

    def to_concrete_value(self):
        # (the recorded equations up to it evaluated now, as for a comparison's result: NOTE:
        # [eager grad program cache]; the value is a tracer of an outer transformation's own)
        return core.concrete_value_or_none(self._trace.concrete(self._var))

    def _jax_repr(self):  # (Tracer.__repr__) JAX's GradTracer, with its primal as JAX's shows
        trace = self._trace
        value = trace.values.get(self._var, trace.sources.get(self._var, trace))
        if value is trace and not any(has_effects(e) for e in trace.eqns[trace.n_forced :]):
            # (computed now, as a comparison's result is: a pending effect would run twice)
            try:
                value = trace.concrete(self._var)
            except Exception:  # (a repr never raises: shown without its primal)
                value = trace
        tangent = f"typeof(tangent)={self._aval.str_short()}"
        return f"GradTracer({tangent})" if value is trace else f"GradTracer(primal={value}, {tangent})"


def _runs_user_rules(primitive, params) -> bool:
    if primitive.traits.runs_user_rules:
        # funcgrad's own custom_jvp functions are pure (NOTE: [library custom_jvp]).
        return not getattr(params.get("jvp"), "library_rule", False)
    if primitive.traits.jaxpr_params and primitive is not eager_call_p:  # (cached programs hold none)
        return any(_jaxpr_runs_user_rules(j) for j in jaxprs_in_params(params))
    return False


def _jaxpr_runs_user_rules(jaxpr: Jaxpr) -> bool:
    hit = _user_rules_memo.get(id(jaxpr))
    if hit is not None and hit[0]() is jaxpr:
        return hit[1]
    out = any(_runs_user_rules(e.primitive, e.params) for e in jaxpr.eqns)
    # (Weakly: the branches of a ``cond`` are new objects every call, and may hold big constants.)
    bounded_put(_user_rules_memo, id(jaxpr), (weakref.ref(jaxpr), out), 1024)
    return out


_user_rules_memo: dict = register_cache("kernel.user_rules_memo", {})


_DEVICE = MemorySpace.Device


def _aval_key(aval) -> tuple:
    """An input's or constant's type as the program cache keys it: shape, dtype, weak type and,
    where the type holds them, its sharding on explicit mesh axes and its memory space (the
    derivative program types its cotangents by them: NOTE: [sharding in types]). Hashed and
    compared in C."""
    s, space = getattr(aval, "_sharding", None), getattr(aval, "memory_space", _DEVICE)
    if s is None and space is _DEVICE:
        return (aval.shape, aval.dtype, aval.weak_type)
    return (aval.shape, aval.dtype, aval.weak_type, s, space)


class RecordingTrace(core.Trace):
    """Records the equations that read its tracers; evaluates the rest on its parent now."""

    checks_leaks = False  # (as JAX's grad: NOTE: [leak checking])

    def __init__(self, parent):
        super().__init__(parent)
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.const_vals: list[Any] = []
        self.const_ids: dict[int, Var] = {}
        self.sources: dict[Var, Any] = {}  # input and constant vars -> the value they stand for
        self.values: dict[Var, Any] = {}  # concrete values computed so far (forced)
        self.n_forced = 0  # equations evaluated so far
        self.numbers: dict[Var, int] = {}
        self.key: list | None = []
        self.user_rules = False
        self.eager = False  # every recorded equation is evaluated as it is recorded

    def describe(self) -> str:
        return "a reverse-mode derivative (grad)"

    def _number(self, var: Var) -> None:
        self.numbers[var] = len(self.numbers)

    def new_arg(self, value) -> RecordingTracer:
        aval = core.get_aval(value)
        var = Var(aval)
        self.invars.append(var)
        self.sources[var] = value
        self._number(var)
        if self.key is not None:
            self.key.append(_aval_key(aval))
        return RecordingTracer(self, aval, var)

    def atom(self, x) -> Var:
        if type(x) is RecordingTracer and x._trace is self:
            return x._var
        if isinstance(x, core.Tracer):
            core.check_foreign_tracer(self, x)
        # Every other value is a constant passed to the program as an argument (no literals: a
        # value never enters the key, only its aval does).
        var = self.const_ids.get(id(x))
        if var is None:
            aval = core.get_aval(x)
            var = Var(aval)
            self.const_ids[id(x)] = var
            self.constvars.append(var)
            self.const_vals.append(x)
            self.sources[var] = x
            self._number(var)
            if self.key is not None:
                self.key.append(("const", _aval_key(aval)))
        return var

    def process_primitive(self, primitive, args, params):
        for a in args:
            if type(a) is RecordingTracer and a._trace is self:
                break
        else:
            # No recorded input: the parent computes it now (what the JVP trace does with a
            # primitive whose inputs carry no tangent).
            return self.process_on_parent(primitive, args, params)
        if primitive.abstract_eval is None:  # (JAX's errors, in its order: the JVP rule first)
            what = "Differentiation rule" if primitive.jvp is None else "Abstract evaluation"
            raise NotImplementedError(f"{what} for '{primitive.name}' not implemented")
        atoms = [a._var if type(a) is RecordingTracer and a._trace is self else self.atom(a) for a in args]
        avals = [v.aval for v in atoms]
        out = typed_outputs(primitive, avals, primitive.abstract_eval(*avals, **params), params)
        numbers = self.numbers
        key = self.key
        if key is not None:
            try:
                key.append((primitive, params_key(params), *[numbers[v] for v in atoms]))
            except TypeError:  # an unhashable parameter: this program is not cached
                self.key = None
        if (primitive.traits.runs_user_rules or primitive.traits.jaxpr_params) and not self.user_rules:
            self.user_rules = _runs_user_rules(primitive, params)
        # Values without a derivative are concrete, as under the JVP trace (NOTE: [eager grad
        # program cache]).
        if not primitive.multiple_results:
            var = Var(out)
            numbers[var] = len(numbers)
            self.eqns.append(JaxprEqn(primitive, atoms, params, [var], None))
            if self.eager:
                self._evaluate_pending()
            if primitive.traits.not_differentiable or not _dt.is_inexact(out.dtype):
                return self.concrete(var)
            return RecordingTracer(self, out, var)
        outvars = [Var(a) for a in out]
        for v in outvars:
            numbers[v] = len(numbers)
        self.eqns.append(JaxprEqn(primitive, atoms, params, outvars, None))
        if self.eager:
            self._evaluate_pending()
        if primitive.traits.not_differentiable:
            return [self.concrete(v) for v in outvars]
        return [
            RecordingTracer(self, v.aval, v) if _dt.is_inexact(v.aval.dtype) else self.concrete(v)
            for v in outvars
        ]

    def replay(self, template, inputs):
        """Record ``template``'s equations (a surface function's cached sub-program, NOTE:
        [surface templates]) on ``inputs`` -- what binding them one by one would record, without
        the per-equation abstract evaluation and parameter freezing, which the template did once.
        Returns the template's outputs (a list when it has several)."""
        if template.generic or self.eager or self.key is None:
            return template.bind_each(self, inputs)
        vals = template.init.copy()
        for n, x in zip(template.in_slots, inputs):
            vals[n] = x._var if type(x) is RecordingTracer else x
        numbers, key, eqns = self.numbers, self.key, self.eqns
        # (Loops rather than comprehensions: a 3.11 comprehension is a function call, and most
        # templates are one or two equations of one or two operands.)
        for primitive, params, pkey, ins, outs, out_avals, live in template.steps:
            if not live:  # reads no recorded value: computed now, as process_primitive would
                result = self.process_on_parent(primitive, [vals[i] for i in ins], params)
                if primitive.multiple_results:
                    for o, r in zip(outs, result):
                        vals[o] = r
                else:
                    vals[outs[0]] = result
                continue
            atoms = []
            entry = [primitive, pkey]
            for i in ins:
                v = vals[i]
                if type(v) is not Var:
                    v = self.atom(v)
                atoms.append(v)
                entry.append(numbers[v])
            key.append(tuple(entry))
            if len(outs) == 1:
                vals[outs[0]] = var = Var(out_avals[0])
                numbers[var] = len(numbers)
                outvars = [var]
            else:
                outvars = []
                for o, aval in zip(outs, out_avals):
                    vals[o] = var = Var(aval)
                    numbers[var] = len(numbers)
                    outvars.append(var)
            eqns.append(_new_eqn(JaxprEqn, (primitive, atoms, params, outvars, None)))
        if not template.multiple_outputs:
            v = vals[template.out_slots[0]]
            return RecordingTracer(self, v.aval, v) if type(v) is Var else v
        return [
            RecordingTracer(self, v.aval, v) if type(v) is Var else v
            for v in [vals[n] for n in template.out_slots]
        ]

    # -- concrete values on demand

    def concrete(self, var: Var):
        """The concrete value of ``var``: the recorded equations up to it, evaluated now."""
        values = self.values
        if var in self.sources:
            return self._read(var)
        if var not in values:
            self._evaluate_pending()
            if type(self.parent) is core.EvalTrace:
                # The forward pass has been computed up to here: compute the rest as it is
                # recorded, and let the cached program start from those values (NOTE: [eager
                # grad program cache]).
                self.eager = True
        return values[var]

    def _evaluate_pending(self) -> None:
        values = self.values
        root = self.parent
        while root.parent is not None:
            root = root.parent
        eqns = self.eqns
        with core.set_current_trace(root):
            for eqn in eqns[self.n_forced :]:
                if has_effects(eqn):
                    # Its effect would happen now and again when the derivative program runs
                    # the forward pass (NOTE: [eager grad program cache]): not recorded.
                    raise EffectsInRecording(eqn.primitive.name)
                ins = [self._read(a) for a in eqn.invars]
                outs = eqn.primitive.bind(*ins, **eqn.params)
                if eqn.primitive.multiple_results:
                    values.update(zip(eqn.outvars, outs))
                else:
                    values[eqn.outvars[0]] = outs
        self.n_forced = len(eqns)

    def _read(self, var: Var):
        values = self.values
        if var in values:
            return values[var]
        value = self.sources[var]
        if isinstance(value, RecordingTracer):
            value = value._trace.concrete(value._var)
        values[var] = value
        return value

    # -- the program

    def finish(self, outs) -> Recording:
        outvars = [self.atom(o) for o in outs]
        jaxpr = Jaxpr([], [*self.constvars, *self.invars], self.eqns, outvars)
        key = None
        if self.key is not None and not self.user_rules:
            key = (*self.key, ("out", *[self.numbers[v] for v in outvars]), ("eager", self.eager))
        # (In eager mode every equation was evaluated as it was recorded.)
        forward = [self.values[v] for e in self.eqns for v in e.outvars] if self.eager else None
        return Recording(jaxpr, self.const_vals, key, forward)


class Recording:
    """What one eager call recorded: the program (constants first, then the inputs), the
    constants' values, the structural key (``None``: not cacheable) and the forward values."""

    __slots__ = ("jaxpr", "consts", "key", "forward")

    def __init__(self, jaxpr: Jaxpr, consts: list, key, forward: list | None = None):
        self.jaxpr = jaxpr
        self.consts = consts
        self.key = key
        # The value of every equation's outputs, in order, when the recording computed them
        # (it had to, for a concrete value: a comparison, an integer), else ``None``.
        self.forward = forward

    def replay(self, *args) -> list:
        """Evaluate the recorded program on the current trace."""
        return core.eval_jaxpr(self.jaxpr, [], *self.consts, *args)


def record(f: Callable, args) -> Recording:
    """Run ``f(*args) -> list`` once, recording what depends on ``args``: the program from
    ``args`` to the outputs (callers evaluate it; the recording tracers die with the trace)."""
    changes = _dt.thread_x64.changes
    with core.new_trace(RecordingTrace) as trace:
        tracers = [trace.new_arg(a) for a in args]
        outs = f(*tracers)
        rec = trace.finish(outs)
    if _dt.thread_x64.changes != changes:
        # A thread's own dtype mode was entered or left inside: the program would be replayed in
        # another mode than it was made in (NOTE: [x64 mode per thread]); ``f`` runs on the
        # ordinary path, which differentiates it as it runs, as JAX's.
        raise EffectsInRecording("enable_x64")
    return rec


# ----------------------------------------------------------------------------------------------
# The program cache


class ProgramCache:
    """Canonical programs by structural key, from their second sighting; each entry keeps what
    was derived from its program (``_Entry.get(flags, build)``)."""

    def __init__(self, capacity: int = 512):
        self.capacity = capacity
        self.seen: dict = {}
        self.programs: dict = {}

    def lookup(self, rec: Recording) -> _Entry | None:
        key = rec.key
        if key is None:
            return None
        entry = self.programs.get(key)
        if entry is not None:
            return entry
        if key not in self.seen and not cache_first_sighting:
            bounded_put(self.seen, key, True, 4 * self.capacity)
            return None
        # Not pruned of dead equations: its equations correspond one to one to any recording
        # with this key, whose forward values ``given_forward_values`` takes in that order.
        entry = _Entry(ClosedJaxpr(rec.jaxpr, []))
        bounded_put(self.programs, key, entry, self.capacity)
        return entry

    def clear(self) -> None:
        """Forget every program and sighting (``funcgrad.clear_caches``)."""
        self.seen.clear()
        self.programs.clear()

    def __len__(self) -> int:
        return len(self.programs) + len(self.seen)


def inline_eager_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every ``eager_call`` equation replaced by the equations of its program
    (recursively): evaluating the cached program is then one loop, not a call per inner grad."""
    if not any(e.primitive is eager_call_p for e in closed.jaxpr.eqns):
        return closed
    constvars, consts, eqns = list(closed.jaxpr.constvars), list(closed.consts), []

    def inline(jaxpr: Jaxpr, env: dict) -> None:
        for eqn in jaxpr.eqns:
            ins = [env.get(a, a) if type(a) is Var else a for a in eqn.invars]
            if eqn.primitive is eager_call_p:
                inner = eqn.params["jaxpr"]
                inner_env = dict(zip(inner.jaxpr.invars, ins))
                for v, c in zip(inner.jaxpr.constvars, inner.consts):
                    inner_env[v] = new = Var(v.aval)
                    constvars.append(new)
                    consts.append(c)
                inline(inner.jaxpr, inner_env)
                outs = [inner_env.get(a, a) if type(a) is Var else a for a in inner.jaxpr.outvars]
                env.update(zip(eqn.outvars, outs))
            else:
                outvars = [Var(v.aval) for v in eqn.outvars]
                env.update(zip(eqn.outvars, outvars))
                eqns.append(JaxprEqn(eqn.primitive, ins, eqn.params, outvars, eqn.source_info))

    env: dict = {}
    inline(closed.jaxpr, env)
    outvars = [env.get(a, a) if type(a) is Var else a for a in closed.jaxpr.outvars]
    jaxpr = Jaxpr(constvars, closed.jaxpr.invars, eqns, outvars)
    return ClosedJaxpr(jaxpr, consts)


def given_forward_values(program: ClosedJaxpr, recorded: ClosedJaxpr) -> ClosedJaxpr:
    """``program`` (whose inputs are ``recorded``'s) taking, after its inputs, the values of all
    of ``recorded``'s equations: each equation of ``program`` that computes one of them -- the
    same primitive, parameters and inputs -- reads the value instead, so the forward pass a
    recording already computed is not computed again (what is left is the backward pass and
    whatever the derivative rules compute differently)."""
    j = program.jaxpr
    env: dict = dict(zip(recorded.jaxpr.invars, j.invars))
    forward_vars, known = [], {}
    for eqn in recorded.jaxpr.eqns:
        outs = [Var(v.aval) for v in eqn.outvars]
        forward_vars.extend(outs)
        try:
            known[equation_key(eqn.primitive, eqn.params, [env.get(a, a) for a in eqn.invars])] = outs
        except TypeError:  # an unhashable parameter: that equation is computed again
            pass
        env.update(zip(eqn.outvars, outs))
    given = ClosedJaxpr(Jaxpr(j.constvars, [*j.invars, *forward_vars], j.eqns, j.outvars), program.consts)
    return simplify(given, known)


class _Entry:
    __slots__ = ("closed", "derived")

    def __init__(self, closed: ClosedJaxpr):
        self.closed = closed
        self.derived: dict = {}

    def get(self, flags, build: Callable):
        out = self.derived.get(flags)
        if out is None:
            out = self.derived[flags] = build(self.closed)
        return out


program_cache = register_cache("kernel.eager_programs", ProgramCache())  # NOTE: [caches have an owner]
# ``funcgrad.config.update("funcgrad_eager_program_cache", False)`` (or
# FUNCGRAD_EAGER_PROGRAM_CACHE=0) turns recording off: every eager grad runs the JVP trace.
enabled = os.environ.get("FUNCGRAD_EAGER_PROGRAM_CACHE", "1") != "0"
# FUNCGRAD_EAGER_PROGRAM_CACHE=first caches a program on its first sighting: running the test suite
# so sends every eager grad through the cached path (the default caches from the second, so that
# one-off calls cost no more than before).
cache_first_sighting = os.environ.get("FUNCGRAD_EAGER_PROGRAM_CACHE") == "first"


def recording_applies() -> bool:
    """Whether an eager derivative may record here: at the top (plain eager evaluation) or inside
    another recording, and no debugging tool wants every equation's source line."""
    t = type(core._state.trace)
    return (
        enabled and (t is core.EvalTrace or t is RecordingTrace) and not core.source_info_config.in_linearize
    )


__all__ = [
    "EffectsInRecording",
    "eager_call_p",
    "program_cache",
    "record",
    "recording_applies",
    "Recording",
    "RecordingTrace",
    "RecordingTracer",
]
