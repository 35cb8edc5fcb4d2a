"""What each trace does with a call of a ``custom_jvp`` / ``custom_vjp`` function.

Layer: kernel. Imports ``core``, ``ad``, ``batching``, ``partial_eval``, ``recording`` and
``tree_util``; it knows the custom call only through the small protocol below
(``kernel/custom_derivatives.py`` implements it), so it does not import that module.

# NOTE: [custom calls follow the trace]
# JAX evaluates a custom-derivative function by asking the current trace what to do with it
# (``process_custom_jvp_call``), and so does funcgrad, with one handler per trace type here:
#
# - no transformation (``EvalTrace``): run the Python function once, on the values given, and
#   return what it returns -- Python control flow on the arguments works, a ``print`` runs once,
#   a Python float the function makes stays a Python float; a Python scalar argument reaches it
#   as the typed scalar JAX's ``bind`` makes of it (``TypedFloat(1.0, dtype=float32)``), so one
#   it returns comes back typed, as in JAX (``linear_call`` does the same);
# - forward mode (``JVPTrace``): run the user's rule on the parent trace with the primals and
#   tangents, as JAX does -- under eager ``jvp``/``grad`` the primals are concrete values, so
#   ``if x > 0:`` in the rule works; the primal function runs only if the rule calls it. A
#   ``custom_vjp`` runs ``fwd`` now and emits ``custom_lin``, whose transpose is ``bwd``;
# - partial evaluation (``linearize``): known arguments are the parent's business; so are
#   unbatched ones under ``vmap`` (without a named axis: collectives may use it);
# - eager ``grad``'s recording (NOTE: [eager grad program cache]): the outermost recording
#   linearizes the call at once, at its concrete arguments (the rule runs once, as under JAX's
#   ``grad``), and records one equation that replays that linearization; a recording nested in
#   another (eager ``grad(grad(f))``) has no concrete arguments to give, so it sends its ``grad``
#   down the ordinary JVP path (``PrimalsNeeded``), where the outer recording's values reach the
#   rule as they reach JAX's;
# - every other trace (``jit``/``make_jaxpr`` staging, ``vmap``, ``jet``, a nested recording of
#   funcgrad's own pure functions): trace the primal function to a jaxpr and bind the
#   ``custom_jvp_call`` / ``custom_vjp_call`` primitive, whose rules carry the user's rules along.
#
# A trace delegates to its parent when the call has none of its tracers (the parent then decides,
# with the parent current). funcgrad's own custom_jvp functions keep the traced path everywhere
# (NOTE: [library custom_jvp]): they are pure, so nothing can tell the difference, and their traced
# equation is what the eager grad program cache keys on.

The custom call protocol (``CustomCall``): ``flat`` (the differentiable arguments' leaves),
``with_flat(leaves)``, ``run()`` (the Python function on the arguments), ``staged(home=None)``
(trace and bind on the current trace; ``home``: the vmap whose values the rules may close over),
``jvp_now(primals, tangents) -> (out_tree, primals_out, tangents_out)`` (the rule, on the current
trace) and ``bind_linearized(...)`` (record a linearization).
"""

from __future__ import annotations

from typing import Any, Protocol

from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ad import JVPTrace, JVPTracer, Zero
from funcgrad.kernel.batching import BatchTrace, BatchTracer
from funcgrad.kernel.partial_eval import PartialEvalTrace
from funcgrad.kernel.recording import RecordingTrace, RecordingTracer


class CustomCall(Protocol):
    """A call of a custom-derivative function with its arguments (see the module docstring)."""

    name: str
    flat: list

    def with_flat(self, flat: list) -> CustomCall: ...
    def run(self) -> Any: ...
    def staged(self, home: BatchTrace | None = None) -> Any: ...
    def jvp_now(self, primals: list, tangents: list) -> tuple[Any, list, list]: ...
    def bind_linearized(self, out_tree, out_primals, lin, out_zeros, own) -> Any: ...


class PrimalsNeeded(core.ConcretizationTypeError):
    """A user's custom rule met a recording nested in another: eager ``grad`` takes its ordinary
    path instead (it catches ``ConcretizationTypeError`` from a recording; NOTE: [custom calls
    follow the trace])."""


def process_custom_call(call: CustomCall) -> Any:
    """Evaluate ``call`` as the current trace does (NOTE: [custom calls follow the trace]).

    >>> class Call:  # the smallest custom call: without a transformation it needs ``run``, and
    ...     name = "f"  # ``with_flat`` (Python scalars reach the function typed, as JAX's bind makes them)
    ...     def __init__(self, flat):
    ...         self.flat = flat
    ...     def with_flat(self, flat):
    ...         return Call(flat)
    ...     def run(self):
    ...         return self.flat[0] * 3
    >>> float(process_custom_call(Call([2.0])))
    6.0
    """
    return _process(core.current_trace(), call)


def _process(trace: core.Trace, call: CustomCall) -> Any:
    for cls in type(trace).__mro__:
        handler = _HANDLERS.get(cls)
        if handler is not None:
            return handler(trace, call)
    own = getattr(trace, "process_custom_call", None)  # (a trace of a layer above: its own rule)
    if own is not None:
        return own(call)
    return call.staged()


def _on_parent(trace: core.Trace, call: CustomCall) -> Any:
    with core.set_current_trace(trace.parent):
        return _process(trace.parent, call)


def _eval(trace, call):
    flat = call.flat
    if any(type(x) in _dt.python_scalar_types for x in flat):
        call = call.with_flat([_dt.typed_scalar(x) for x in flat])
    return call.run()


def _jvp(trace: JVPTrace, call: CustomCall):
    primals, tangents, own = trace.unpack(call.flat, JVPTracer, ad._primal_and_tangent)
    if not own:
        return _on_parent(trace, call)
    tangents = [Zero.from_primal_value(p) if t is None else t for p, t in zip(primals, tangents)]
    with core.set_current_trace(trace.parent):
        try:
            out_tree, p_out, t_out = call.jvp_now(primals, tangents)
        except core.UnexpectedTracerError as e:
            raise core.UnexpectedTracerError(
                f"{e}\nIn the custom derivative rule of {call.name}: a custom rule differentiates "
                "with respect to its explicit arguments only. If the function or its rule closes "
                "over a value being differentiated, pass that value as an argument (or use "
                "funcgrad.closure_convert)."
            ) from None
    return tu.tree_unflatten(out_tree, [trace.lift(p, t) for p, t in zip(p_out, t_out)])


def _partial_eval(trace: PartialEvalTrace, call: CustomCall):
    if any(trace.is_unknown(a) for a in call.flat):
        return call.staged()
    return _on_parent(trace, call)


def _batch(trace: BatchTrace, call: CustomCall):
    # (A named axis stays: the function may use collectives over it on unbatched values.)
    if trace.axis_name is None and not any(type(a) is BatchTracer and a._trace is trace for a in call.flat):
        try:
            return _on_parent(trace, call)
        except core.UnexpectedTracerError:
            # The function closes over this vmap's values (JAX's issues 3822, 8783): JAX runs it
            # under the vmap, as staging it here does (the parent met a tracer it cannot take).
            pass
    # (The rules may close over this vmap's values too: they run in this trace when batched.)
    return call.staged(home=trace)


def _recording(trace: RecordingTrace, call: CustomCall):
    own = [type(a) is RecordingTracer and a._trace is trace for a in call.flat]
    if not any(own):
        return _on_parent(trace, call)
    if type(trace.parent) is not core.EvalTrace:
        raise PrimalsNeeded(
            f"the custom derivative rule of {call.name} needs its primal values, which a nested "
            "eager grad recording does not have"
        )
    primals = [trace.concrete(a._var) if o else a for a, o in zip(call.flat, own)]
    with core.set_current_trace(trace.parent):
        with core.new_trace(PartialEvalTrace, None, "linearize") as pe:
            t_in = [pe.new_arg(ad.tangent_aval(core.get_aval(p))) for p, o in zip(primals, own) if o]
            it = iter(t_in)
            with core.new_trace(JVPTrace) as jt:
                args = [JVPTracer(jt, p, next(it)) if o else p for p, o in zip(primals, own)]
                out_leaves, out_tree = tu.tree_flatten(_jvp(jt, call.with_flat(args)))
                out_p, out_t = ad._unpack_jvp_outputs(jt, out_leaves)
            zeros = [type(t) is Zero or not pe.is_unknown(t) for t in out_t]
            lin = pe.builder.build(pe, t_in, [t for t, z in zip(out_t, zeros) if not z])
    return call.bind_linearized(out_tree, out_p, lin, zeros, own)


_HANDLERS = {
    core.EvalTrace: _eval,
    JVPTrace: _jvp,
    PartialEvalTrace: _partial_eval,
    RecordingTrace: _recording,
    BatchTrace: _batch,
}
