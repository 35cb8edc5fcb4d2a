"""The call-primitive kit: the rules of a primitive that calls a jaxpr, written once.

Layer: kernel. Imports ``core``, ``ir``, ``ad``, ``batching``, ``partial_eval`` and ``taylor``.

A call primitive (``jit``, ``checkpoint``, and any later primitive that runs a staged sub-program
as a unit) carries a ``ClosedJaxpr`` in its ``jaxpr`` parameter. Each of its rules transforms that
jaxpr and binds the primitive again on the result, so a transformation of the call stays one call:
``grad(jit(f))`` is a jit of the JVP, then a jit of the transposed linear part.

The kit's parts live where their subject lives; this module puts them together:

- one interpreter, ``core.eval_jaxpr(jaxpr, consts, *args, bind=...)`` (pluggable ``bind``);
- one forward sweep, ``ir.forward_dependents``, and one backward sweep,
  ``ir.backward_dependencies``;
- the jaxpr-to-jaxpr transformations ``ad.jvp_jaxpr``, ``ad.transpose_jaxpr`` (with symbolic-zero
  cotangents), ``batching.batch_jaxpr``, ``partial_eval.partial_eval_jaxpr`` and
  ``taylor.jet_jaxpr`` (the control-flow primitives use it too), memoised per
  source jaxpr here (NOTE: [derived jaxpr cache]);
- ``CallPrimitive``: a primitive with all of those rules. A call primitive with a twist overrides
  one rule (``checkpoint`` its partial evaluation and transpose, ``jit`` its impl).
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad.kernel import core
from funcgrad.kernel.ad import (
    Zero,
    ct_aval,
    is_undefined_primal,
    jvp_jaxpr,
    transpose_jaxpr_nonzero,
    transpose_jaxpr_with_state,
)
from funcgrad.kernel.array import Array
from funcgrad.kernel.batching import batch_jaxpr, current_axis_name
from funcgrad.kernel.caches import CacheGroup, register_cache
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.held_state import WrittenState
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var
from funcgrad.kernel.partial_eval import partial_eval_jaxpr
from funcgrad.kernel.taylor import jet_jaxpr

# Every DerivedJaxprs' memo (NOTE: [caches have an owner]).
_derived = register_cache("kernel.derived_jaxprs", CacheGroup(lambda d: d.entries))


class DerivedJaxprs:
    """Memoise a jaxpr-to-jaxpr transformation per (source jaxpr object, flags).

    # NOTE: [derived jaxpr cache]
    # Jaxprs are immutable, and ``funcgrad.jit`` reuses its traced jaxpr objects, so the JVP,
    # partial-evaluation, transpose and batched programs derived from one are the same every
    # call. Reusing the derived objects lets ``grad(jit(f))`` skip re-tracing them and lets the
    # compiled-executable cache (keyed by jaxpr object) hit. Entries keep their source jaxpr alive,
    # so an ``id`` is never reused while its entry exists. ``keep(out)`` says whether a result may
    # be reused (a transposition that wrote Refs is not: its Python ran for those Refs).
    """

    def __init__(self, fn, capacity: int = 512, keep=None):
        self.fn = fn
        self.keep = keep
        self.capacity = capacity
        self.entries: dict = {}
        _derived.add(self)

    def __call__(self, closed, *flags):
        key = (id(closed), *flags)
        hit = self.entries.get(key)
        if hit is not None and hit[0] is closed:
            return hit[1]
        out = self.fn(closed, *flags)
        if self.keep is not None and not self.keep(out):
            return out
        if len(self.entries) >= self.capacity:
            self.entries.pop(next(iter(self.entries)))  # oldest first
        self.entries[key] = (closed, out)
        return out


derived_jvp = DerivedJaxprs(lambda closed, nonzeros: jvp_jaxpr(closed, list(nonzeros), instantiate=False))
# (transposed jaxpr, the Refs its backward pass wrote: NOTE: [state written by a backward pass])
derived_transpose = DerivedJaxprs(
    lambda closed, linear, ct_zero, ct_weak=None: transpose_jaxpr_with_state(
        closed, list(linear), list(ct_zero), ct_weak
    ),
    keep=lambda out: not out[1],
)
# (the same, its outputs only the nonzero cotangents, and their flags)
derived_transpose_nonzero = DerivedJaxprs(
    lambda closed, linear, ct_zero, ct_weak=None: transpose_jaxpr_nonzero(
        closed, list(linear), list(ct_zero), ct_weak
    ),
    keep=lambda out: not out[1],
)
derived_batch = DerivedJaxprs(
    lambda closed, axis_size, dims, axis_name: batch_jaxpr(
        closed, axis_size, list(dims), instantiate=False, axis_name=axis_name
    )
)
derived_jet = DerivedJaxprs(
    lambda closed, order, nonzeros, inst: jet_jaxpr(closed, order, list(nonzeros), list(inst))
)


# NOTE: [residuals forwarded from a call's inputs]
# A residual of a call's known part that is one of that part's own inputs is not returned by it
# (a copy of its input, as an output of the compiled program) but handed to the unknown part as
# the input it is, as JAX's pjit partial evaluation forwards them: ``grad(jit(f))`` saves ``y``
# of ``sin(x) * y`` once, and ``saved_residuals`` of a checkpoint around jitted calls counts it
# once. ``fwd``: for each residual, the known input it is, or None (returned by the known part).
def _partial_eval_forwarding(closed, unknowns):
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, list(unknowns), instantiate=False)
    kj = known.jaxpr
    n_out = len(kj.outvars) - num_res
    position = {v: i for i, v in enumerate(kj.invars)}
    fwd = tuple(position.get(v) if type(v) is Var else None for v in kj.outvars[n_out:])
    if any(f is not None for f in fwd):
        kept = [v for v, f in zip(kj.outvars[n_out:], fwd) if f is None]
        outvars = [*kj.outvars[:n_out], *kept]
        known = ClosedJaxpr(Jaxpr(kj.constvars, kj.invars, kj.eqns, outvars, kj.effects), known.consts)
    return known, unknown, out_unknowns, fwd


derived_partial_eval = DerivedJaxprs(
    lambda closed, unknowns: partial_eval_jaxpr(closed, list(unknowns), instantiate=False)
)
derived_partial_eval_forwarding = DerivedJaxprs(_partial_eval_forwarding)


def _ins(indices) -> tuple:
    return tuple(("in", i) for i in indices)


def _outs(indices) -> tuple:
    return tuple(("out", j) for j in indices)


def _same_params(params: dict, jaxpr, derivation: str, n_args: int, **layout) -> dict:
    return {**params, "jaxpr": jaxpr}


def _eval_call(*args, jaxpr, **_):
    """A call's eager evaluation: its jaxpr, equation by equation. The results take the weak types
    the staged call gives (NOTE: [one eager step]): a backward pass hands the call raw NumPy
    operands, which carry no weak type (grad of a checkpoint at a Python float is weak, as in JAX)."""
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    return [
        Array._from_owned(o._numpy(), v.aval.weak_type)
        if type(o) is Array and o.weak_type != v.aval.weak_type and o.dtype == v.aval.dtype
        else o
        for o, v in zip(outs, jaxpr.jaxpr.outvars)
    ]


class CallPrimitive(Primitive):
    """A primitive that calls the ``ClosedJaxpr`` in its ``jaxpr`` parameter, with every rule.

    ``derive_params(params, new_jaxpr, derivation, n_args, **layout)`` gives the parameters of a
    derived call (``derivation`` is "jvp", "jet", "transpose", "batch", "known" or "unknown";
    ``n_args`` its argument count); by default only ``jaxpr`` changes. ``layout`` says what the
    derived call's inputs and outputs stand for (``ins``/``outs``: per derived input/output,
    ``("in", i)`` or ``("out", j)`` -- the original input or output whose value, tangent or
    cotangent it is -- or None for a residual or extra value; for "batch", each one's batch
    dimension or None), so per-input parameters (a jit's shardings) can follow them; JVP,
    transpose, partial evaluation and batching give it, other callers none.

    >>> from funcgrad.kernel import ir
    >>> p = CallPrimitive("my_call")
    >>> p.traits.call_jaxpr_param, p.traits.jaxpr_params
    ('jaxpr', ('jaxpr',))
    """

    def __init__(self, name: str, derive_params: Callable = _same_params):
        super().__init__(name, multiple_results=True)
        self.derive_params = derive_params
        self.def_traits(call_jaxpr_param="jaxpr", jaxpr_params=("jaxpr",))
        self.def_impl(_eval_call)
        self.def_abstract_eval(self._abstract_eval)
        self.def_jvp(self._jvp)
        self.def_transpose(self._transpose)
        self.def_batch(self._batch)
        self.def_partial_eval(self._partial_eval)
        self.def_taylor(self._taylor)

    def _abstract_eval(self, *avals, jaxpr, **params):
        check_call_avals(f"{self.name} call", avals, jaxpr.in_avals)
        return jaxpr.out_avals

    def _derived(self, params, jaxpr, derivation, n_args, **layout):
        return self.derive_params(params, jaxpr, derivation, n_args, **layout)

    def _jvp(self, primals, tangents, *, jaxpr, **params):
        nonzeros = tuple(type(t) is not Zero for t in tangents)
        jvp_closed, out_nonzeros = derived_jvp(jaxpr, nonzeros)
        args = [*primals, *(t for t in tangents if type(t) is not Zero)]
        n = len(jaxpr.out_avals)
        layout = dict(
            ins=(*_ins(range(len(primals))), *_ins(i for i, nz in enumerate(nonzeros) if nz)),
            outs=(*_outs(range(n)), *_outs(i for i, nz in enumerate(out_nonzeros) if nz)),
        )
        derived = self._derived({**params, "jaxpr": jaxpr}, jvp_closed, "jvp", len(args), **layout)
        outs = self.bind(*args, **derived)
        out_primals, nz_outs = outs[:n], iter(outs[n:])
        return out_primals, [
            next(nz_outs) if nz else Zero.from_primal_value(p) for p, nz in zip(out_primals, out_nonzeros)
        ]

    def _taylor(self, primals, series, *, jaxpr, **params):
        # Which terms are nonzero, term by term (NOTE: [zero series]).
        masks = tuple(tuple(type(t) is not Zero for t in s) for s in series)
        jet_closed, out_masks = derived_jet(jaxpr, len(series[0]), masks, (False,) * len(jaxpr.out_avals))
        args = [*primals, *(t for s in series for t in s if type(t) is not Zero)]
        outs = self.bind(*args, **self._derived({**params, "jaxpr": jaxpr}, jet_closed, "jet", len(args)))
        n = len(jaxpr.out_avals)
        out_primals, terms = outs[:n], iter(outs[n:])
        return out_primals, [
            [next(terms) if z else Zero.from_primal_value(p) for z in m]
            for p, m in zip(out_primals, out_masks)
        ]

    def _transpose(self, cts, *args, jaxpr, **params):
        linear = tuple(is_undefined_primal(a) for a in args)
        ct_zero = tuple(type(ct) is Zero for ct in cts)
        ct_weak = tuple(core.get_aval(ct).weak_type for ct in cts if type(ct) is not Zero)
        # (an input whose cotangent is a symbolic zero gets Zero, not a computed zero: JAX's)
        transposed, items, nonzero = derived_transpose_nonzero(jaxpr, linear, ct_zero, ct_weak)
        written = WrittenState(items)  # (NOTE: [state written by a backward pass])
        call_args = [
            *(a for a in args if not is_undefined_primal(a)),
            *(c for c in cts if type(c) is not Zero),
            *written.leaves,
        ]
        lin_idx = [i for i, lin in enumerate(linear) if lin]
        nz_idx = [i for i, nz in zip(lin_idx, nonzero) if nz]
        n_lin = len(nz_idx)
        # (a cotangent stands for the output it is the cotangent of, a result for its linear input)
        layout = dict(
            ins=(
                *_ins(i for i, a in enumerate(args) if not is_undefined_primal(a)),
                *_outs(j for j, c in enumerate(cts) if type(c) is not Zero),
                *(None for _ in written.leaves),
            ),
            outs=(*_ins(nz_idx), *[None] * (len(transposed.out_avals) - n_lin)),
        )
        params = self._derived({**params, "jaxpr": jaxpr}, transposed, "transpose", len(call_args), **layout)
        outs = self.bind(*call_args, **params)
        written.write(outs[n_lin:])
        cts_in = dict(zip(nz_idx, outs[:n_lin]))
        return [
            cts_in[i] if i in cts_in else Zero(ct_aval(a.aval)) if lin else None
            for i, (a, lin) in enumerate(zip(args, linear))
        ]

    def _batch(self, axis_size, vals, dims, *, jaxpr, **params):
        batched, out_dims = derived_batch(jaxpr, axis_size, tuple(dims), current_axis_name())
        # (a batched call's layout: each input's and output's batch dimension, None if unbatched)
        derived = self._derived(
            {**params, "jaxpr": jaxpr}, batched, "batch", len(vals), ins=dims, outs=out_dims
        )
        return self.bind(*vals, **derived), out_dims

    def _partial_eval(self, trace, args, unknowns, *, jaxpr, **params):
        params = {**params, "jaxpr": jaxpr}
        known, unknown, out_unknowns, fwd = derived_partial_eval_forwarding(jaxpr, tuple(unknowns))
        num_res, n_returned = len(fwd), sum(f is None for f in fwd)
        known_args = [a for a, uk in zip(args, unknowns) if not uk]
        known_layout = dict(
            ins=_ins(i for i, uk in enumerate(unknowns) if not uk),
            outs=(*_outs(j for j, uk in enumerate(out_unknowns) if not uk), *[None] * n_returned),
        )
        with core.set_current_trace(trace.parent):
            known_params = self._derived(params, known, "known", len(known_args), **known_layout)
            known_outs = self.bind(*known_args, **known_params)
        n_known = len(known_outs) - n_returned
        returned = iter(known_outs[n_known:])  # NOTE: [residuals forwarded from a call's inputs]
        residuals = [next(returned) if f is None else known_args[f] for f in fwd]
        unknown_args = [*residuals, *(a for a, uk in zip(args, unknowns) if uk)]
        unknown_layout = dict(
            ins=(*[None] * num_res, *_ins(i for i, uk in enumerate(unknowns) if uk)),
            outs=_outs(j for j, uk in enumerate(out_unknowns) if uk),
        )
        unknown_params = self._derived(params, unknown, "unknown", len(unknown_args), **unknown_layout)
        unknown_outs = trace.stage(self, unknown_args, unknown_params)
        it_known, it_unknown = iter(known_outs[:n_known]), iter(unknown_outs)
        return [next(it_unknown) if uk else next(it_known) for uk in out_unknowns]


__all__ = [
    "check_call_avals",
    "CallPrimitive",
    "DerivedJaxprs",
    "derived_batch",
    "derived_jet",
    "derived_jvp",
    "derived_partial_eval",
    "derived_partial_eval_forwarding",
    "derived_transpose",
    "derived_transpose_nonzero",
]


def check_call_avals(what: str, avals, expected) -> None:
    """Raise ``TypeError`` naming ``what`` unless the operand avals match the traced program's
    inputs (count, shapes and dtypes): a call primitive bound with other operands than its
    jaxpr was traced for."""
    if len(avals) != len(expected):
        raise TypeError(f"{what} expects {len(expected)} arguments, got {len(avals)}")
    for i, (a, e) in enumerate(zip(avals, expected)):
        if (a.shape, a.dtype) != (e.shape, e.dtype):
            raise TypeError(
                f"{what}: argument {i} is {a.str_short()} but the program was traced for {e.str_short()}"
            )
