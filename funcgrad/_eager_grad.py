"""Eager ``grad`` through recorded programs and cached value-and-gradient programs.

Layer: surface. Imports the kernel (``recording``, ``simplify``, ``ad``, ``core``, ``partial_eval``,
``dtypes``, ``tree_util``) and ``funcgrad._api_util``.

``value_and_grad`` called eagerly records ``f`` (``kernel/recording.py``), and once the same
program has been seen before, evaluates the cached program that computes the value and the
gradient in one call (NOTE: [eager grad program cache]). A first sighting, or a program that
cannot be cached, runs the recorded program through the ordinary linearize-and-transpose.
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad._api_util import canonical_numpy, canonicalize, flat_fun, split_aux, to_public, unit_cotangent
from funcgrad.kernel import ad, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.kernel.recording import (
    EffectsInRecording,
    eager_call_p,
    given_forward_values,
    inline_eager_calls,
    program_cache,
    record,
    recording_applies,
)
from funcgrad.kernel.simplify import simplify


def recorded_value_and_grad(f: Callable, dyn: list, has_aux: bool, with_value: bool = True):
    """``(out, aux, grads, vjp_parts)`` of ``f`` at ``dyn`` through a recording, or ``None`` when
    the recording does not apply (see ``recording_applies``; non-float inputs).

    On the cached path ``vjp_parts`` is ``None`` and ``grads`` is the gradient pytree; otherwise
    ``grads`` is ``None`` and ``vjp_parts`` is ``(linear function, in_tree, out_tree, n_out)`` for
    the caller's ordinary backward pass. ``with_value=False`` (``grad``, which discards it) lets
    the cached program skip whatever only the value needs; ``out`` is then ``None``.
    """
    if not recording_applies():
        return None
    flat_p, in_tree = tu.tree_flatten(tuple(dyn))
    flat_p = canonicalize(canonical_numpy(flat_p))  # (as vjp's, NOTE: [x64 mode])
    for p in flat_p:
        if not _dt.is_float(core.dtype_of(p)):
            return None
    flat, store = flat_fun(f, in_tree, has_aux, transform="vjp")
    try:
        rec = record(flat, flat_p)
    except (core.ConcretizationTypeError, EffectsInRecording):
        # Something the JVP trace would have had concrete (a derivative-free float used as a
        # Python value), or an effect before a concrete value: the ordinary path runs ``f``.
        return None
    n_out = store["n_out"]
    entry = None
    out_aval = rec.jaxpr.outvars[0].aval if n_out == 1 else None
    if out_aval is not None and out_aval.shape == () and _dt.is_float(out_aval.dtype):
        entry = program_cache.lookup(rec)
    if entry is None:
        out_p, lin = ad.linearize_flat(rec.replay, flat_p)
        out, aux = split_aux(out_p, store, has_aux)
        return out, aux, None, (lin, in_tree, store["out_tree"], n_out)
    n_consts = len(rec.consts)
    with_value = with_value or has_aux
    program = entry.get(
        ("value_and_grad", n_consts, with_value), lambda c: _value_and_grad_program(c, n_consts, with_value)
    )
    if rec.forward is None:
        outs = eager_call_p.bind(*rec.consts, *flat_p, jaxpr=program)
    else:
        # The recording computed the forward pass (it needed a concrete value): start from it.
        given = ("given_forward", n_consts, with_value)
        program = entry.get(given, lambda c: given_forward_values(program, c))
        outs = eager_call_p.bind(*rec.consts, *flat_p, *rec.forward, jaxpr=program)
    n_vals = len(outs) - len(flat_p)
    out, aux = split_aux(outs[:n_vals], store, has_aux) if with_value else (None, None)
    grads = tu.tree_unflatten(in_tree, [to_public(g) for g in outs[n_vals:]])
    return out, aux, grads, None


def _value_and_grad_program(closed, n_consts: int, with_value: bool = True):
    """The program ``(consts..., inputs...) -> (outputs..., gradients...)`` of a recorded
    program whose first output is a real scalar: linearize, then transpose with cotangent 1.
    Without the value, the outputs are the gradients (and nothing computes what only the value
    needed)."""
    in_avals = closed.in_avals

    def value_and_grad(*args):
        consts = args[:n_consts]
        outs, lin = ad.linearize_flat(
            lambda *xs: eager_call_p.bind(*consts, *xs, jaxpr=closed), args[n_consts:]
        )
        seed = unit_cotangent(lin.out_avals[0])
        cts = lin.transpose([seed, *[ad.Zero(a) for a in lin.out_avals[1:]]])
        return [*(outs if with_value else outs[1:]), *[ad.instantiate(ct) for ct in cts]]

    return simplify(inline_eager_calls(trace_to_jaxpr(value_and_grad, in_avals)))
