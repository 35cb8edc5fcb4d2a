"""``check_vma``: along which mesh axes may each value of a ``shard_map`` body differ between
devices? A dataflow pass over the body (``eqn_varying``, one equation at a time) answers it; the
answer refuses an output whose out spec leaves out an axis it may vary along
(``check_out_vma``) and gives a vjp taken inside the body JAX's meaning
(``vma_adjustment``, ``_LogicalLinear``).

Layer: surface, under ``funcgrad.parallel`` (which stages shard_map bodies and re-exports
``vma_adjustment``). Imports the kernel (``ad``, the IR, tracers), the primitive catalog
(collectives, ``shard_map_p``, ``div``), ``funcgrad.numpy._core``'s ``asarray`` and
``funcgrad._shard_map_eager`` (the eager body's tracers).

# NOTE: [gradients inside shard_map]
# JAX types each value of a checked shard_map body with the mesh axes it varies along and makes
# psum's transpose a "pvary" (and the implicit pvary of an invariant operand a psum). For a
# vjp taken inside the body this is the transpose of the *logical* function, whose invariant
# inputs and outputs are single values: with J the devices' stacked Jacobian (which funcgrad's
# transposes compute, NOTE: [transposes of collectives]), an output invariant along axes A is
# one of |A| identical copies, so its cotangent is shared (divided by |A|), and an input
# invariant along axes B is broadcast, so its cotangent is the psum over B. ``vma_adjustment``
# finds those axes with the dataflow pass over the body staged so far, and the body makes
# ``_LogicalLinear`` the transpose convention of every ``vjp`` inside it (NOTE: [transpose
# conventions] in kernel/ad.py): ``vjp`` itself knows nothing of shard_map. So
# ``grad(lambda w: pmean(loss(w, x), "i"))(w)`` is the mean gradient and the gradient of a local
# loss with respect to replicated parameters is the sum over devices, as in JAX 0.10.
"""

from __future__ import annotations

import math

from funcgrad import _shard_map_eager as _eager
from funcgrad.kernel import ad, core, ir
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import StagingTracer
from funcgrad.numpy._core import asarray
from funcgrad.primitives import _unreduced_rules as ur
from funcgrad.primitives import collectives as co
from funcgrad.primitives import control_flow as cf
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import sharding as shp
from funcgrad.primitives.scan import scan_p

# As in JAX 0.10, all_gather's result still varies along its axes (each device holds its own
# copy; out_specs=P() after it needs check_vma=False or a psum/pmean).
_REDUCING = {co.psum_p, co.pmax_p, co.pmin_p, co.all_gather_invariant_p, co.all_gather_reduced_p}
_VARYING = {co.axis_index_p, co.ppermute_p, co.psum_scatter_p, co.all_to_all_p, co.all_gather_p}


def _varying(jaxpr: ir.Jaxpr, ins: list) -> list:
    env = _varying_env(jaxpr, ins)
    return [env.get(a, frozenset()) if isinstance(a, ir.Var) else frozenset() for a in jaxpr.outvars]


def _open(jaxpr) -> ir.Jaxpr:
    return jaxpr.jaxpr if isinstance(jaxpr, ir.ClosedJaxpr) else jaxpr


def _varying_env(jaxpr: ir.Jaxpr, ins: list) -> dict:
    env = dict(zip(jaxpr.invars, ins))
    for v in jaxpr.constvars:
        env[v] = frozenset()
    for eqn in jaxpr.eqns:
        vin = [env.get(a, frozenset()) if isinstance(a, ir.Var) else frozenset() for a in eqn.invars]
        env.update(zip(eqn.outvars, eqn_varying(eqn.primitive, eqn.params, vin, len(eqn.outvars))))
    return env


def _loop_fixed_point(body: ir.Jaxpr, consts, carry, xs=()) -> tuple[list, list]:
    """A loop body's carries ``(consts, carry, xs) -> (carry, ...)``: the axes each carry varies
    along, grown over the body to a fixed point, and the body's outputs' axes there."""
    carry = list(carry)
    while True:
        outs = _varying(body, [*consts, *carry, *xs])
        grown = [a | b for a, b in zip(carry, outs)]
        if grown == carry:
            return carry, outs
        carry = grown


def eqn_varying(p, params, vin, n_out) -> list:
    """The mesh axes each output of one equation may vary along, given its inputs'."""
    union = frozenset().union(*vin)
    if p in _REDUCING:
        return [union - set(params["axis_name"])]
    if p in _VARYING:
        return [union | set(params["axis_name"])]
    if p is co.pcast_p:  # (to unreduced: the devices' values become partial sums, not varying)
        to, axes = params["to"], set(params["axis_name"])
        return [union - axes if to == "unreduced" else union | axes if to == "varying" else union]
    if p is shp.shard_map_p:
        # A nested shard_map: its outputs vary along the enclosing axes its inputs vary along.
        return [union] * n_out
    if p is cf.cond_p:
        # As JAX's rule: a result varies along what the branches' results vary along, joined
        # (operands no branch reads add nothing; nor does the index, as in JAX's types).
        outs = [frozenset()] * n_out
        for branch in params["branches"]:
            outs = [a | b for a, b in zip(outs, _varying(_open(branch), vin[1:]))]
        return outs
    if p is scan_p:
        # The ys follow the body's last pass, at the carries' fixed point.
        nc, ncar = params["num_consts"], params["num_carry"]
        body = _open(params["jaxpr"])
        return _loop_fixed_point(body, vin[:nc], vin[nc : nc + ncar], vin[nc + ncar :])[1]
    if p is cf.while_p:
        # As scan's carries (the predicate's axes are not joined in, as in JAX's types).
        bn = params["body_nconsts"]
        start = params["cond_nconsts"] + bn
        return _loop_fixed_point(_open(params["body_jaxpr"]), vin[start - bn : start], vin[start:])[0]
    if p.traits.call_jaxpr_param is not None:
        inner = _open(params[p.traits.call_jaxpr_param])
        return _varying(inner, vin) if len(inner.invars) == len(vin) else [union] * n_out
    return [union] * n_out


def _typed(aval, vma) -> str:
    names = sorted(map(str, vma))
    return aval.str_short() + (
        "{V:" + (names[0] if len(names) == 1 else f"({','.join(names)})") + "}" if names else ""
    )


def _pcast_hint(applications, sep) -> str:
    if not applications:
        return ""
    if len(applications) == 1:
        hint = f"This might be fixed by {applications[0]}.\n"
    else:
        hint = "This might be fixed by:\n" + sep.join(f"  * {d};" for d in applications[:-1])
        hint += f"{sep}  * {applications[-1]}.\n"
    return (
        hint
        + "See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more information.\n\n"
    )


def _reads_pcast(jaxpr) -> bool:
    marked = _eager.pcast_vars
    if any(id(v) in marked for v in jaxpr.invars):
        return True
    for eqn in jaxpr.eqns:
        if any(id(v) in marked for v in eqn.outvars) or any(id(v) in marked for v in eqn.invars):
            return True
        if any(_reads_pcast(_open(j)) for j in ir.jaxprs_in_params(eqn.params)):
            return True
    return False


auto_pcast = [True]  # jax_auto_pcast (funcgrad/_config_flags.py)


def set_auto_pcast(on: bool) -> None:
    """``jax_auto_pcast``: whether an elementwise operation of values varying along different
    manual axes casts them to vary alike (JAX's default) or is JAX's ValueError."""
    auto_pcast[0] = bool(on)


def check_matching_vma(p, vin) -> None:
    """With ``jax_auto_pcast`` off, JAX's standard_vma_rule: the operands of an elementwise
    operation must vary along the same manual axes (in its words)."""
    if auto_pcast[0] or len(vin) < 2 or p not in ur._nary:
        return
    if any(frozenset(v) != frozenset(vin[0]) for v in vin[1:]):
        raise ValueError(
            f"Primitive {p.name} requires varying manual axes to match, but got {[set(v) for v in vin]}. "
            "Please open an issue at https://github.com/jax-ml/jax/issues and as a temporary workaround "
            "pass the check_vma=False argument to `jax.shard_map`"
        )


def check_control_flow_vma(p, params, vin) -> None:
    """JAX's refusals of a cond whose branches' results, or a loop whose carries, vary along
    different manual axes (its 'pvary' TypeErrors, with the pcast that fixes each), for an eager
    checked body, whose values' varying axes are exact (``pcast`` marks them there). A jaxpr
    that pcast a value of is let through: its staged types do not show the cast."""
    if _eager.pcast_vars and any(_reads_pcast(_open(j)) for j in ir.jaxprs_in_params(params)):
        return
    if p is cf.cond_p:
        branches = [_open(b) for b in params["branches"]]
        outs = [_varying(b, vin[1:]) for b in branches]
        # (JAX's cond binds (false_fun, true_fun); a switch names its branches by index)
        pairs = [(1, 0, "true_fun", "false_fun")] if len(branches) == 2 else []
        pairs += [
            (0, k, "branches[0]", f"branches[{k}]") for k in range(1, len(branches)) if len(branches) > 2
        ]
        for i, j, name1, name2 in pairs:
            bad = [k for k, (a, b) in enumerate(zip(outs[i], outs[j])) if a != b]
            if not bad:
                continue
            avals = (
                branches[i].out_avals
                if hasattr(branches[i], "out_avals")
                else [v.aval for v in branches[i].outvars]
            )
            diffs = [
                f"the output of {name1}[{k}] has type {_typed(avals[k], outs[i][k])} but the corresponding "
                f"output of {name2} has type {_typed(avals[k], outs[j][k])}, so the manual axis types do not "
                "match"
                for k in bad
            ]
            fixes = [
                f"applying `jax.lax.pcast(..., {tuple(sorted(a - b))}, to='varying')` to the output of "
                f"{n}[{k}]"
                for k in bad
                for n, a, b in ((name1, outs[j][k], outs[i][k]), (name2, outs[i][k], outs[j][k]))
                if b - a
            ]
            differences = (
                f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
                if len(diffs) == 1
                else "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
            )
            raise TypeError(
                "cond branches must have equal output types but they differ.\n\n"
                f"{differences}\n{_pcast_hint(fixes, chr(10))}"
                f"Revise {name1} and/or {name2} so that all output types match."
            )
        return
    if p is scan_p:
        nc, ncar = params["num_consts"], params["num_carry"]
        body, name, start = _open(params["jaxpr"]), "scan body", nc
    elif p is cf.while_p:
        start = params["cond_nconsts"] + params["body_nconsts"]
        body, name, ncar = _open(params["body_jaxpr"]), "while_loop body", len(vin) - start
        vin = [*vin[params["cond_nconsts"] : start], *vin[start:]]
        start = params["body_nconsts"]
    else:
        return
    ins = vin[start : start + ncar]
    outs = _varying(body, vin)[:ncar]
    bad = [k for k, (a, b) in enumerate(zip(ins, outs)) if a != b]
    if not bad:
        return
    avals = [v.aval for v in body.invars[start : start + ncar]]
    diffs = [
        f"the input carry at path [{k}] has type {_typed(avals[k], ins[k])} but the corresponding output "
        f"carry component has type {_typed(avals[k], outs[k])}, so the manual axis types do not match"
        for k in bad
    ]
    fixes = [
        f"applying `jax.lax.pcast(..., {tuple(sorted(outs[k] - ins[k]))}, to='varying')`, to the initial "
        f"carry value corresponding to the input carry at path [{k}]"
        for k in bad
        if outs[k] - ins[k]
    ]
    differences = (
        f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
        if len(diffs) == 1
        else "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
    )
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they differ:\n\n"
        f"{differences}\n{_pcast_hint(fixes, chr(10))}"
        "Revise the function so that all output types match the corresponding input types."
    )


def _unwrap(x):
    """The value a transformation's tracer carries (a JVP tracer's primal, a batch tracer's value)."""
    while isinstance(x, core.Tracer) and not isinstance(x, StagingTracer | _eager.ShardMapTracer):
        inner = getattr(x, "primal", None)
        if inner is None:
            inner = getattr(x, "val", None)
        if inner is None:
            return x
        x = inner
    return x


def vma_adjustment(trace, seeds, mesh, primals, outputs, manual=None):
    """For a vjp of ``outputs`` with respect to ``primals`` inside the checked shard_map body being
    staged on ``trace`` (its inputs varying along ``seeds``): the mesh axes to psum each input's
    cotangent over and the factor to divide each output's cotangent by (NOTE: [gradients inside
    shard_map]); ``None`` when nothing needs adjusting."""
    builder = trace.builder
    env = dict(zip(builder.invars, seeds))
    ins = [env.get(v, frozenset()) for v in builder.invars]
    jaxpr = ir.Jaxpr(builder.const_list, builder.invars, builder.eqns, [])
    manual = tuple(mesh.axis_names) if manual is None else tuple(manual)
    everything = frozenset(manual)
    known = _varying_env(jaxpr, ins)
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))

    def varying(x):
        x = _unwrap(x)
        if not isinstance(x, core.Tracer):
            return frozenset()
        if isinstance(x, StagingTracer) and x._trace is trace:
            return known.get(x._var, frozenset())
        return everything  # a value of another transformation: assume it differs between devices

    in_sums = [tuple(n for n in manual if n not in varying(p)) for p in primals]
    out_shares = [math.prod(sizes[n] for n in everything - varying(o)) for o in outputs]
    if not any(in_sums) and all(k == 1 for k in out_shares):
        return None
    return in_sums, out_shares


class _LogicalLinear(ad.LinearFunction):
    """The linear map of a vjp inside a checked shard_map body, transposed as the logical function
    (NOTE: [gradients inside shard_map]): an output's cotangent is shared among its ``out_shares``
    identical copies, an input's is summed over the mesh axes ``in_sums`` it is broadcast along."""

    __slots__ = ("in_sums", "out_shares")

    def __init__(self, lin: ad.LinearFunction, in_sums, out_shares):
        super().__init__(lin.closed, lin.in_avals, lin.out_avals, lin.out_zeros)
        self.in_sums = in_sums
        self.out_shares = out_shares

    def transpose(self, cotangents):
        shares = [*self.out_shares, *[1] * (len(cotangents) - len(self.out_shares))]  # (aux: zeros)
        cts = [
            c if k == 1 or type(c) is ad.Zero else ew.div(asarray(c), k) for c, k in zip(cotangents, shares)
        ]
        cts_in = super().transpose(cts)
        sums = zip(cts_in, self.in_sums)
        cts_in = [ct if not a or type(ct) is ad.Zero else co.psum(ct, a) for ct, a in sums]
        # (typed as its primal, as JAX's cotangents are: jacrev's results vary as its inputs)
        return [ct if type(ct) is ad.Zero else hooks.vary_like(ct, a) for ct, a in zip(cts_in, self.in_avals)]


def _logical_transpose(trace, seeds, mesh, manual, lin, primals, outputs):
    """shard_map's transpose convention (NOTE: [transpose conventions] in kernel/ad.py)."""
    adjustment = vma_adjustment(trace, seeds, mesh, primals, outputs, manual)
    if adjustment is None:  # (nothing to sum or share: its cotangents typed still)
        adjustment = [()] * len(lin.in_avals), [1] * len(lin.out_avals)
    return _LogicalLinear(lin, *adjustment)


def _eager_logical_transpose(trace, lin, primals, outputs):
    """The transpose convention of a vjp inside an eager shard_map body: as
    ``_logical_transpose``, with the varying axes its tracers carry (NOTE: [eager shard_map])."""
    manual = trace.manual
    sizes = dict(zip(trace.mesh.axis_names, trace.mesh.devices.shape))

    def varying(x):
        x = _unwrap(x)
        if type(x) is _eager.ShardMapTracer and x._trace is trace:
            return x.vma
        return frozenset(manual) if isinstance(x, core.Tracer) else frozenset()

    in_sums = [tuple(n for n in manual if n not in varying(p)) for p in primals]
    out_shares = [math.prod(sizes[n] for n in manual if n not in varying(o)) for o in outputs]
    if not any(in_sums) and all(k == 1 for k in out_shares):
        return lin
    return _LogicalLinear(lin, in_sums, out_shares)


def check_out_vma(outs, out_specs, out_leaf_specs, where, paths, mesh=None, manual=()):
    """Refuse an output that may differ along a mesh axis its out spec leaves out (check_vma),
    in JAX's words, with the fixes."""
    msgs = []
    for vary, spec, user_spec, path in zip(outs, out_specs, out_leaf_specs, paths):
        mentioned = {n for dim in spec for n in dim}
        missing = [n for n in manual if n in vary and n not in mentioned]
        if not missing:
            continue
        unmentioned = [n for n in manual if n not in mentioned]
        if len(unmentioned) > 1:
            need = ",".join(str(n) for n in manual if n in mentioned)
            got = ",".join(str(n) for n in manual if n in vary)
            msgs.append(
                f"out_specs{path} is {user_spec!r} which implies that the corresponding output value is only "
                f"varying across mesh axes {{{need}}} and not {{{','.join(map(str, missing))}}}, but it was "
                f"inferred to be possibly varying over {{{got}}}"
            )
        else:
            msgs.append(
                f"out_specs{path} is {user_spec!r} which implies that the corresponding output value is "
                f"replicated across mesh axis {missing[0]!r}, but could not infer replication over any axes"
            )
    if not msgs:
        return
    if len(msgs) > 1:
        msgs = [f"* {m}" for m in msgs]
    name = where[len("shard_map(") : -1] if where.startswith("shard_map(") else where
    shape = tuple(mesh.devices.shape) if mesh is not None else ()
    names = tuple(mesh.axis_names) if mesh is not None else ()
    raise ValueError(
        f"shard_map applied to the function '{name}' was given out_specs which require replication which "
        "can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {shape} with corresponding axis names {names}.\n\n"
        + "\n\n".join(msgs)
        + "\n\nCheck if these output values are meant to be replicated over those mesh axes. If not, "
        "consider revising the corresponding out_specs entries. If so, consider disabling the check by "
        "passing the check_vma=False argument to `jax.shard_map`."  # (JAX's words)
    )
