"""Lowering rule of the call family (primitives/call.py): a nested ``jit`` becomes a ``func.call``
of a private function, lowered once per distinct inner jaxpr (see the ``xla_bridge.lowering``
docstring); XLA inlines it when it compiles the module.

A nested call's ``device`` parameter does not matter here: the enclosing program runs where it
was placed, and the inner call is part of it.

Layer: xla_bridge (compiler half). Imports the primitive catalog and ``xla_bridge.emitter``.
"""

from __future__ import annotations

from funcgrad.primitives.call import composite_p, jit_p, xla_metadata_call_p
from funcgrad.xla_bridge.dtypes import attribute_text, string_literal
from funcgrad.xla_bridge.emitter import aval_type, register
from funcgrad.xla_bridge.emitter import escaped as _escaped
from funcgrad.xla_bridge.sharded import asked_unreduced

from funcgrad.kernel import tree_util as tu


@register(jit_p)
def _jit(ctx, *args, jaxpr, name, donated_invars, device=None, in_shardings=None, out_shardings=None):
    # A nested jit's shardings constrain its arguments and results where the enclosing program
    # spans a mesh (as JAX's pjit lowering does); on one device they say nothing.
    args = _constrained(ctx, args, ctx.avals_in, in_shardings)
    sym = ctx.fb.module.private_function(jaxpr, str(name))
    out_types = [aval_type(a) for a in ctx.avals_out]
    in_types = [aval_type(a) for a in ctx.avals_in]
    rhs = f"func.call @{sym}({', '.join(args)}) : ({', '.join(in_types)}) -> ({', '.join(out_types)})"
    fb, loc = ctx.fb, ctx.fb.loc
    if loc.endswith('/jit")') or loc == ' loc("jit")':
        # (JAX's location of the call: the name stack extended by ``jit(g)``, NOTE: [operation
        # locations] in xla_bridge/emitter.py; XLA names the call instruction ``jit_g_``)
        fb.loc = f'{loc[:-2]}({_escaped(str(name))})")'
    outs = fb.emit_results(rhs, len(out_types))
    fb.loc = loc
    return _constrained(ctx, outs, ctx.avals_out, out_shardings)


@register(xla_metadata_call_p)
def _xla_metadata_call(ctx, *args, jaxpr, **meta):
    # A call of a private function whose operation carries ``meta`` as frontend attributes (JAX's
    # scheduling_groups lowering; NOTE: [xla metadata] in xla_bridge/emitter.py).
    for v in meta.values():
        if not isinstance(v, str):
            raise NotImplementedError(f"mlir attr handler for type(x)={type(v)}")
    sym = ctx.fb.module.private_function(jaxpr, "xla_metadata_call")
    out_types = [aval_type(a) for a in ctx.avals_out]
    in_types = [aval_type(a) for a in ctx.avals_in]
    rhs = f"func.call @{sym}({', '.join(args)}) : ({', '.join(in_types)}) -> ({', '.join(out_types)})"
    outs = ctx.fb.emit_results(rhs, len(out_types))
    if outs:
        ctx.fb.frontend_attributes(outs[0], tuple(sorted(meta.items())))
    return outs


@register(composite_p)
def _composite(ctx, *args, jaxpr, name, attributes, version):
    # JAX's lowering: the decomposition as a private function named after the composite, called
    # by a stablehlo.composite op carrying the attributes (None ones omitted) and a nonzero version.
    sym = ctx.fb.module.private_function(jaxpr, name, dotted=True)
    attrs = {}
    for key, leaves, treedef in attributes:
        value = tu.tree_unflatten(treedef, [getattr(x, "val", x) for x in leaves])
        if value is not None:
            attrs[key] = value
    fields = ([f"composite_attributes = {attribute_text(attrs)}"] if attrs else []) + [
        f"decomposition = @{sym}"
    ]
    if version:
        fields.append(f"version = {int(version)} : i32")
    in_types = ", ".join(aval_type(a) for a in ctx.avals_in)
    out_types = [aval_type(a) for a in ctx.avals_out]
    rhs = (
        f"stablehlo.composite {string_literal(name)} {', '.join(args)} {{{', '.join(fields)}}} : "
        f"({in_types}) -> ({', '.join(out_types)})"
    )
    return ctx.fb.emit_results(rhs, len(out_types))


def _constrained(ctx, values, avals, shardings):
    spmd = ctx.fb.module.spmd
    if shardings is None or spmd is None or spmd.manual:
        return values
    out = list(values)
    for i, (x, aval, s) in enumerate(zip(values, avals, shardings)):
        mesh, spec = getattr(s, "_fg_mesh", None), getattr(s, "_fg_spec", None)
        if mesh is None or spec is None:
            continue  # unspecified, or a layout without a mesh: the partitioner decides
        # (a sharding unreduced over axes names them: NOTE: [unreduced values])
        sharding = spmd.sharding(mesh, spec, aval.ndim, unreduced=asked_unreduced(s))
        out[i] = ctx.fb.emit(f"sdy.sharding_constraint {x} {sharding} : {aval_type(aval)}")
    return out
