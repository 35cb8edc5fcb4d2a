"""Lowering rules of the call primitives: jit, custom_jvp_call, custom_vjp_call, custom_lin,
checkpoint.

Layer: xla_bridge (compiler half). Imports the kernel (custom_derivatives, remat), the primitive
catalog and ``xla_bridge.lowering``.

A nested ``jit`` becomes a ``func.call`` of a private function, lowered once per distinct inner
jaxpr (see the ``xla_bridge.lowering`` docstring). The other call primitives are inlined: once a
program is staged, a custom derivative rule or a rematerialization boundary has already done its
work (in the jaxpr the transformations produced), so only the primal computation is lowered.
``custom_lin`` (the forward-mode tangent of a custom_vjp function) has no primal meaning and
raises the same clear error as its eager impl.
"""

from __future__ import annotations

from funcgrad.kernel.custom_derivatives import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from primitives.call import jit_p
from primitives.remat import checkpoint_p
from xla_bridge.lowering import _const_value, aval_type, lower_jaxpr_body, register


def _inline(ctx, closed, args):
    fb = ctx.fb
    consts = [
        fb.const(_const_value(c), v.aval.dtype, v.aval.shape)
        for v, c in zip(closed.jaxpr.constvars, closed.consts)
    ]
    return lower_jaxpr_body(fb, closed.jaxpr, consts, list(args))


@register(jit_p)
def _jit(ctx, *args, jaxpr, name, donated_invars):
    sym = ctx.fb.module.private_function(jaxpr, str(name))
    out_types = [aval_type(a) for a in ctx.avals_out]
    in_types = [aval_type(a) for a in ctx.avals_in]
    rhs = f"func.call @{sym}({', '.join(args)}) : ({', '.join(in_types)}) -> ({', '.join(out_types)})"
    if not out_types:
        ctx.fb.raw(rhs)
        return []
    outs = ctx.fb.emit(rhs, nres=len(out_types))
    return outs if isinstance(outs, list) else [outs]


@register(custom_jvp_call_p)
def _custom_jvp_call(ctx, *args, call_jaxpr, **_):
    return _inline(ctx, call_jaxpr, args)


@register(custom_vjp_call_p)
def _custom_vjp_call(ctx, *args, call_jaxpr, **_):
    return _inline(ctx, call_jaxpr, args)


@register(checkpoint_p)
def _checkpoint(ctx, *args, jaxpr, policy):
    return _inline(ctx, jaxpr, args)


@register(custom_lin_p)
def _custom_lin(ctx, *args, num_res, bwd, out_avals, name):
    raise TypeError(
        f"can't apply forward-mode autodiff (jvp) to a custom_vjp function ({name}): only its "
        "reverse-mode rule is defined. Use grad/vjp/jacrev, or define it with custom_jvp instead."
    )
