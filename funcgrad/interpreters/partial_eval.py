"""``funcgrad.interpreters.partial_eval``: JAX's ``jax.interpreters.partial_eval`` over funcgrad's staging.

Layer: surface. Imports the kernel (``partial_eval``: ``StagingTrace``/``PartialEvalTrace`` and
their tracers, ``core``, ``ir``), ``funcgrad.extend.linear_util`` and the rule-table views (NOTE:
[rule tables are views]).

- ``trace_to_jaxpr_dynamic(fun, in_avals)`` stages a ``WrappedFun`` (``jit``'s staging trace);
  ``trace_to_jaxpr_nounits(fun, pvals)`` partially evaluates one: inputs given as
  ``PartialVal.known(value)`` are computed with now, ``PartialVal.unknown(aval)`` ones staged --
  what flax's ``lazy_init`` and ``nn.scan`` use to split off the work that does not depend on the
  scanned inputs.
- ``dce_jaxpr`` removes unused equations and reports which inputs are used; a primitive may bring
  its own rule in ``dce_rules`` (``rule(used_outputs, eqn) -> (used_inputs, new_eqn | None)``),
  which ``dce_jaxpr`` applies. (funcgrad's own transformations drop an equation only when none of
  its outputs is used and it has no side effect.)
- ``custom_partial_eval_rules[p] = rule`` sets ``p``'s partial-evaluation slot: ``rule(trace,
  *args, **params)`` runs when an operand is unknown, on funcgrad's ``PartialEvalTrace`` (known
  operands are values, unknown ones its tracers; ``trace.stage(p, args, params)`` stages an
  equation, ``trace.is_unknown(x)`` tells them apart) -- funcgrad's trace, not JAX's
  ``JaxprTrace``, whose recipes funcgrad does not have.
- ``partial_eval_jaxpr_custom_rules`` records rules of JAX's ``partial_eval_jaxpr_custom``
  (remat's policy-driven split); funcgrad's ``checkpoint`` splits by tracing with the policy and
  does not read them.

>>> import funcgrad.numpy as fnp
>>> from funcgrad.extend import linear_util as lu
>>> from funcgrad.kernel.ir import ShapedArray
>>> f = lu.wrap_init(lambda x, y: [fnp.sin(x), x * y])
>>> in_pvals = [PartialVal.known(0.0), PartialVal.unknown(ShapedArray((), "float64"))]
>>> jaxpr, pvals, consts = trace_to_jaxpr_nounits(f, in_pvals)
>>> [pv.is_known() for pv in pvals], float(pvals[0].get_known()), [e.primitive.name for e in jaxpr.eqns]
([True, False], 0.0, ['mul'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from funcgrad.interpreters._rule_table import RuleTable
from funcgrad.kernel import core as _core
from funcgrad.kernel import ir as _ir
from funcgrad.kernel import partial_eval as _pe
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from funcgrad.kernel.partial_eval import StagingTracer

__all__ = [
    "DynamicJaxprTracer",
    "JaxprTracer",
    "PartialVal",
    "Val",
    "convert_constvars_jaxpr",
    "custom_partial_eval_rules",
    "dce_jaxpr",
    "dce_jaxpr_call_rule",
    "dce_jaxpr_closed_call_rule",
    "dce_jaxpr_consts",
    "dce_rules",
    "partial_eval_jaxpr_custom_rules",
    "trace_to_jaxpr_dynamic",
    "trace_to_jaxpr_nounits",
]

# The tracers of funcgrad's staging trace (``jit``, ``make_jaxpr``) and of its partial-evaluation
# trace are one class.
DynamicJaxprTracer = StagingTracer
JaxprTracer = StagingTracer
Val = Any


class PartialVal(tuple):
    """A value known now, ``(None, value)``, or unknown with only its aval, ``(aval, None)``.

    >>> PartialVal.known(2.0).get_known(), PartialVal.unknown("aval").get_aval()
    (2.0, 'aval')
    """

    def __new__(cls, xs):
        pv, const = xs
        return tuple.__new__(cls, (pv, const))

    @classmethod
    def known(cls, const) -> PartialVal:
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval) -> PartialVal:
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        """The value, or ``None`` when unknown."""
        return self[1] if self[0] is None else None

    def get_aval(self):
        """The aval: the unknown one, or the known value's."""
        return self[0] if self[0] is not None else _core.get_aval(self[1])


def _call(fun):
    return fun.call_wrapped if hasattr(fun, "call_wrapped") else fun


def trace_to_jaxpr_dynamic(fun, in_avals: Sequence[Any], *, keep_inputs=None, lower=False, auto_dce=False):
    """Stage ``fun`` (a ``WrappedFun`` of flat arrays returning a list of them) over ``in_avals``:
    returns ``(jaxpr, out_avals, consts)``, the jaxpr's constvars standing for ``consts``.
    ``keep_inputs[i]`` False drops input ``i`` from the jaxpr's inputs (it must be unused).

    >>> import funcgrad.numpy as fnp
    >>> from funcgrad.extend import linear_util as lu
    >>> from funcgrad.kernel.ir import ShapedArray
    >>> f = lu.wrap_init(lambda x: [fnp.cos(x)])
    >>> jaxpr, out_avals, consts = trace_to_jaxpr_dynamic(f, [ShapedArray((2,), "float32")])
    >>> print(jaxpr), out_avals
    { lambda ; a:f32[2]. let b:f32[2] = cos a in (b,) }
    (None, [ShapedArray(float32[2])])
    """
    del lower, auto_dce
    call = _call(fun)
    closed = _pe.trace_to_jaxpr(lambda *xs: list(call(*xs)), list(in_avals))
    j = closed.jaxpr
    if keep_inputs is not None:
        dropped = [v for v, k in zip(j.invars, keep_inputs) if not k]
        used, _ = _ir.backward_dependencies(j.eqns, j.outvars)
        if any(v in used for v in dropped):
            raise ValueError("trace_to_jaxpr_dynamic: an input marked not kept (keep_inputs) is used")
        j = Jaxpr(j.constvars, [v for v, k in zip(j.invars, keep_inputs) if k], j.eqns, j.outvars)
    return j, list(j.out_avals), list(closed.consts)


def trace_to_jaxpr_nounits(fun, pvals: Sequence[PartialVal], instantiate: bool | Sequence[bool] = False):
    """Partially evaluate ``fun`` (flat arrays in, a list out): known inputs are computed with
    now, the work that needs an unknown input is staged. Returns ``(jaxpr, out_pvals, consts)``:
    ``out_pvals[i]`` is the known value of output ``i`` or its aval when unknown (or
    ``instantiate``\\d); ``jaxpr`` takes the unknown inputs and returns the unknown outputs, its
    constvars standing for ``consts``. Example: the module docstring.
    """
    call = _call(fun)
    with _core.new_trace(_pe.PartialEvalTrace, None, "partial evaluation") as trace:
        unknown_args = []
        args = []
        for pv in pvals:
            pv = PartialVal(pv)
            if pv.is_known():
                args.append(pv[1])
            else:
                # A high-level aval (a typed key's) is staged as its low-level values, raised back
                # into one value of its type for ``fun``; the jaxpr takes the low-level ones.
                lo = [trace.new_arg(a) for a in pv[0].lo_ty()]
                unknown_args.extend(lo)
                args.append(pv[0].raise_val(*lo))
        outs = list(call(*args))
        inst = [instantiate] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
        lo_outs = [_core.get_aval(o).lower_val(o) if _is_high(o) else [o] for o in outs]
        unknown = [any(map(trace.is_unknown, lo)) or i for lo, i in zip(lo_outs, inst)]
        staged_outs = [x for lo, u in zip(lo_outs, unknown) if u for x in lo]
        closed = trace.builder.build(trace, unknown_args, staged_outs)
    out_pvals = [
        PartialVal.unknown(_core.get_aval(o)) if u else PartialVal.known(o) for o, u in zip(outs, unknown)
    ]
    return closed.jaxpr, out_pvals, list(closed.consts)


def _is_high(x) -> bool:
    """Whether ``x``'s aval is a high-level one (a typed key's), made of other low-level values."""
    aval = _core.get_aval(x) if isinstance(x, _core.Tracer) or hasattr(x, "aval") else None
    return aval is not None and type(aval) is not _ir.ShapedArray and aval.lo_ty() != [aval]


# ----------------------------------------------------------------------------------------------
# Dead-code elimination


dce_rules: dict = {}
"""``primitive -> rule(used_outputs, eqn) -> (used_inputs, new_eqn | None)``, applied by
``dce_jaxpr`` (funcgrad's own passes need none: see the module docstring)."""


def _default_dce_rule(used_outputs, eqn):
    if not any(used_outputs) and not eqn.primitive.traits.has_side_effects:
        return [False] * len(eqn.invars), None
    return [type(a) is Var for a in eqn.invars], eqn


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: bool | Sequence[bool], instantiate: bool | Sequence[bool] = False):
    """``jaxpr`` without the equations (and outputs) nothing used needs: returns ``(new_jaxpr,
    used_inputs)``; the new jaxpr has only the used outputs and only the inputs that are used or
    ``instantiate``\\d.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> j = funcgrad.make_jaxpr(lambda x, y: (fnp.sin(x), fnp.cos(y)))(1.0, 2.0).jaxpr
    >>> new, used = dce_jaxpr(j, [False, True])
    >>> print(new), used
    { lambda ; a:f64[]. let b:f64[] = cos a in (b,) }
    (None, [False, True])
    """
    n_out, n_in = len(jaxpr.outvars), len(jaxpr.invars)
    used_outputs = [used_outputs] * n_out if isinstance(used_outputs, bool) else list(used_outputs)
    instantiate = [instantiate] * n_in if isinstance(instantiate, bool) else list(instantiate)
    live = {v for v, u in zip(jaxpr.outvars, used_outputs) if u and type(v) is Var}
    kept: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        used_outs = [v in live for v in eqn.outvars]
        rule = dce_rules.get(eqn.primitive, _default_dce_rule)
        used_ins, new_eqn = rule(used_outs, eqn)
        if new_eqn is not None:
            kept.append(new_eqn)
            live.update(a for a, u in zip(eqn.invars, used_ins) if u and type(a) is Var)
    kept.reverse()
    used_inputs = [v in live or i for v, i in zip(jaxpr.invars, instantiate)]
    new = Jaxpr(
        [v for v in jaxpr.constvars if v in live],
        [v for v, u in zip(jaxpr.invars, used_inputs) if u],
        kept,
        [v for v, u in zip(jaxpr.outvars, used_outputs) if u],
    )
    return new, used_inputs


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with its constvars moved to the front of its inputs."""
    return Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.eqns, jaxpr.outvars)


def dce_jaxpr_consts(jaxpr: Jaxpr, used_outputs: Sequence[bool], instantiate: bool | Sequence[bool] = False):
    """``dce_jaxpr`` that also drops unused constvars: returns ``(new_jaxpr, used_consts,
    used_inputs)``.

    >>> import funcgrad, numpy as np
    >>> j = funcgrad.make_jaxpr(lambda x: (x + np.arange(3.0), x))(1.0).jaxpr
    >>> new, used_consts, used_inputs = dce_jaxpr_consts(j, [False, True])
    >>> used_consts, used_inputs, len(new.eqns)
    ([False], [True], 0)
    """
    n_consts = len(jaxpr.constvars)
    inst = instantiate if isinstance(instantiate, bool) else [False] * n_consts + list(instantiate)
    if isinstance(instantiate, bool):
        inst = [False] * n_consts + [instantiate] * len(jaxpr.invars)
    new, used = dce_jaxpr(convert_constvars_jaxpr(jaxpr), used_outputs, inst)
    used_consts, used_inputs = used[:n_consts], used[n_consts:]
    n_kept = sum(used_consts)
    new = Jaxpr(new.invars[:n_kept], new.invars[n_kept:], new.eqns, new.outvars)
    return new, used_consts, used_inputs


def _dce_call(used_outputs, eqn, param: str, closed: bool):
    if not any(used_outputs) and not eqn.primitive.traits.has_side_effects:
        return [False] * len(eqn.invars), None
    inner = eqn.params[param]
    if closed:
        j, used_inputs = dce_jaxpr(inner.jaxpr, used_outputs)
        new_inner = ClosedJaxpr(
            j, [c for v, c in zip(inner.jaxpr.constvars, inner.consts) if v in set(j.constvars)]
        )
    else:
        new_inner, used_inputs = dce_jaxpr(inner, used_outputs)
    new_eqn = JaxprEqn(
        eqn.primitive,
        [a for a, u in zip(eqn.invars, used_inputs) if u],
        {**eqn.params, param: new_inner},
        [v for v, u in zip(eqn.outvars, used_outputs) if u],
        eqn.source_info,
    )
    return used_inputs, new_eqn


def _call_param(eqn, default: str) -> str:
    if default in eqn.params:
        return default
    return eqn.primitive.traits.call_jaxpr_param or default


def dce_jaxpr_call_rule(used_outputs, eqn):
    """The DCE rule of a call primitive whose (open) jaxpr is its ``call_jaxpr`` parameter:
    the inner jaxpr loses what the unused outputs needed, the equation the inputs it no longer
    reads."""
    return _dce_call(used_outputs, eqn, _call_param(eqn, "call_jaxpr"), closed=False)


def dce_jaxpr_closed_call_rule(used_outputs, eqn):
    """``dce_jaxpr_call_rule`` for a call primitive carrying a ``ClosedJaxpr`` (funcgrad's call
    primitives, whose jaxpr parameter their traits name, such as ``jit``'s ``jaxpr``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> j = funcgrad.make_jaxpr(funcgrad.jit(lambda x, y: (fnp.sin(x), fnp.cos(y))))(1.0, 2.0).jaxpr
    >>> used, eqn = dce_jaxpr_closed_call_rule([True, False], j.eqns[0])
    >>> used, [e.primitive.name for e in eqn.params["jaxpr"].eqns]
    ([True, False], ['sin'])
    """
    return _dce_call(used_outputs, eqn, _call_param(eqn, "call_jaxpr"), closed=True)


# ----------------------------------------------------------------------------------------------
# Partial-evaluation rules


def _from_jax_pe_rule(p, rule):
    def partial_eval(trace, args, unknowns, **params):
        return rule(trace, *args, **params)

    return partial_eval


def _to_jax_pe_rule(p, slot):
    def rule(trace, *args, **params):
        return slot(trace, list(args), [trace.is_unknown(a) for a in args], **params)

    return rule


custom_partial_eval_rules = RuleTable(
    "partial_eval.custom_partial_eval_rules", "partial_eval", _from_jax_pe_rule, _to_jax_pe_rule
)

partial_eval_jaxpr_custom_rules: dict = {}
"""Rules of JAX's ``partial_eval_jaxpr_custom``, recorded (see the module docstring)."""
