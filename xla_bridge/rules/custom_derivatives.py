"""Lowering rules of the custom-derivative primitives, which the kernel declares
(funcgrad/kernel/custom_derivatives.py): ``custom_jvp_call``, ``custom_vjp_call`` and
``custom_lin``.

The calls are inlined: once a program is staged, a custom derivative rule has already done its
work (in the jaxpr the transformations produced), so only the primal computation is lowered.
``custom_lin`` (the forward-mode tangent of a custom_vjp function) has no primal meaning and
raises the same clear error as its eager impl.

Layer: xla_bridge (compiler half). Imports the kernel and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.xla_bridge.emitter import lower_closed, register

from funcgrad.kernel.custom_derivatives import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p


@register(custom_jvp_call_p)
def _custom_jvp_call(ctx, *args, call_jaxpr, **_):
    return lower_closed(ctx.fb, call_jaxpr, args)


@register(custom_vjp_call_p)
def _custom_vjp_call(ctx, *args, call_jaxpr, **_):
    return lower_closed(ctx.fb, call_jaxpr, args)


@register(custom_lin_p)
def _custom_lin(ctx, *args, num_res, bwd, out_avals, name):
    err = TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")  # (JAX's words)
    err.add_note(
        f"{name} defines only a reverse-mode rule: use grad/vjp/jacrev, or define it with custom_jvp instead."
    )
    raise err
