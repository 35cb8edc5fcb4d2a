"""The checkify interpreter: a jaxpr evaluated while an error value is threaded through it.

Layer: surface. Imports the kernel (``core``, ``ir``, ``partial_eval``, ``callkit``,
``custom_derivatives``), the primitive catalog and ``funcgrad.numpy`` (the checks are written
with it, on whatever trace is current).

# NOTE: [checkify error state]
# The error is ``(err, code, payloads)``: ``err`` a bool scalar (did anything fail), ``code`` an
# int32 scalar naming the first failure's *site*, and ``payloads`` one tuple of arrays per site
# (the runtime values its message is formatted with). A site is a static description of what can
# fail -- a ``check`` with its message, formatting tree and argument types; a NaN made by one
# primitive; a division by zero; an out-of-bounds index into an operand of one shape -- registered
# once per process in ``SITES`` by a key of those static facts, so retracing a loop body finds the
# same sites and the same codes. The first failure wins: a later failure changes neither the code
# nor any payload. Only the sites a program can reach are in its state (``sites``, sorted), so
# error values of loops and branches have a fixed structure found by tracing the body once with the
# sites already known and again with the union when the body added some.
#
# The interpreter binds every equation on the current trace, so ``jit(checkify(f))`` stages the
# checks, ``vmap(checkify(f))`` batches them (each batch element has its own error) and eager
# ``checkify(f)`` runs them with NumPy. Higher-order primitives are rebuilt around checkified
# sub-jaxprs: ``cond`` branches, the ``scan`` and ``while`` bodies (the error rides in the carry;
# a while loop's condition is checked before the loop and after every iteration, in the body),
# calls (``jit``, ``checkpoint``: the same call of a checkified jaxpr). A ``custom_jvp``/``custom_vjp``
# call whose function has nothing to check stays as it is; otherwise it is inlined (its custom
# derivative is lost under ``grad(checkify(f))``; ``checkify(grad(f))`` is unaffected). A
# ``shard_map`` (and so ``pmap``) checks its body on every device, as JAX's: each device returns its
# error and the first failing device's is kept. Other primitives that carry jaxprs
# (custom_linear_solve, reductions with a body) are bound unchanged: errors inside them are not
# checked.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.kernel import batching, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.callkit import CallPrimitive
from funcgrad.kernel.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives import control_flow as cf
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import gather as ga
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import scatter as sc
from funcgrad.primitives import sharding as shp
from funcgrad.primitives.checks import check_p
from funcgrad.primitives.scan import scan_p

# ----------------------------------------------------------------------------------------------
# Error categories (the members of the sets passed as ``checkify(errors=...)``)


class ErrorCategory:
    """The base of checkify's error categories; ``checkify(errors=)`` takes a set of them."""


class FailedCheckError(ErrorCategory):
    """A ``check`` (or ``debug_check``) whose predicate was false."""


class NaNError(ErrorCategory):
    """A primitive produced a NaN."""


class OOBError(ErrorCategory):
    """An index out of bounds (gather, dynamic_slice, dynamic_update_slice, scatter)."""


class DivisionByZeroError(ErrorCategory):
    """A division by zero."""


# ----------------------------------------------------------------------------------------------
# Sites


class Site(NamedTuple):
    """A static place that can fail: its category, message format (``str.format`` with the
    payload's leaves by ``fmt_tree``) and the avals of its payload."""

    category: type
    msg: str
    fmt_tree: Any  # a PyTreeDef of (args, kwargs), or None: the payload is positional
    payload_avals: tuple

    def message(self, payload) -> str:
        # (as Arrays, as JAX formats them: a value inside a container prints as Array(...))
        values = [fnp.asarray(np.asarray(v)) for v in payload]
        if self.fmt_tree is None:
            return self.msg.format(*values)
        args, kwargs = tu.tree_unflatten(self.fmt_tree, values)
        return self.msg.format(*args, **kwargs)


SITES: list[Site] = []
_SITE_CODES: dict[Site, int] = {}


def site_code(site: Site) -> int:
    """The code of ``site``, registered on first use."""
    code = _SITE_CODES.get(site)
    if code is None:
        code = _SITE_CODES[site] = len(SITES)
        SITES.append(site)
    return code


OOB_MSG = (
    "out-of-bounds indexing for array of shape {}: index {{}} is out of bounds for axis {{}} with size {{}}. "
)
_OOB_PAYLOAD = (ShapedArray((), np.dtype(np.int32)),) * 3  # (as JAX's payload)


# ----------------------------------------------------------------------------------------------
# The error state


def _zeros(aval):
    return np.zeros(aval.shape, aval.dtype)


class ErrorState:
    """The error threaded through an interpretation (NOTE: [checkify error state])."""

    __slots__ = ("err", "code", "payloads")

    def __init__(self, err=None, code=None, payloads=None):
        self.err = np.bool_(False) if err is None else err
        self.code = np.int32(-1) if code is None else code
        self.payloads: dict[int, tuple] = dict(payloads or {})

    @property
    def sites(self) -> tuple[int, ...]:
        return tuple(sorted(self.payloads))

    def flat(self, sites=None) -> list:
        """``[err, code, *payload leaves]`` over ``sites`` (absent ones as zeros)."""
        out = [self.err, self.code]
        for s in self.sites if sites is None else sites:
            p = self.payloads.get(s)
            out.extend(p if p is not None else [_zeros(a) for a in SITES[s].payload_avals])
        return out

    @staticmethod
    def avals(sites) -> list[ShapedArray]:
        out = [ShapedArray((), np.dtype(np.bool_)), ShapedArray((), np.dtype(np.int32))]
        for s in sites:
            out.extend(SITES[s].payload_avals)
        return out

    @staticmethod
    def unflatten(sites, flat) -> tuple[ErrorState, list]:
        """An error state read from the front of ``flat``, and the rest of ``flat``."""
        err, code, i = flat[0], flat[1], 2
        payloads = {}
        for s in sites:
            n = len(SITES[s].payload_avals)
            payloads[s] = tuple(flat[i : i + n])
            i += n
        return ErrorState(err, code, payloads), list(flat[i:])

    def add(self, failed, site: Site, payload=()) -> None:
        """Record ``site`` as failing where the bool scalar ``failed`` is true, unless an earlier
        failure was recorded."""
        code = site_code(site)
        first = fnp.logical_and(failed, fnp.logical_not(self.err))
        self.err = fnp.logical_or(self.err, failed)
        self.code = fnp.where(first, np.int32(code), self.code)
        old = self.payloads.get(code)
        if old is None:
            old = [_zeros(a) for a in site.payload_avals]
        self.payloads[code] = tuple(
            fnp.where(first, fnp.asarray(new).astype(a.dtype), o)
            for new, o, a in zip(payload, old, site.payload_avals)
        )


# ----------------------------------------------------------------------------------------------
# The interpreter


def checkify_jaxpr(jaxpr: Jaxpr, consts, state: ErrorState, args, enabled: frozenset) -> list:
    """Evaluate ``jaxpr`` on the current trace, recording failures in ``state``."""

    def bind(prim, vals, params):
        rule = RULES.get(prim)
        if rule is None and isinstance(prim, CallPrimitive):
            rule = _call_rule
        if rule is not None:
            return rule(state, enabled, vals, params, prim)
        out = prim.bind(*vals, **params)
        if NaNError in enabled and prim.traits.may_produce_nan:
            _check_nans(state, prim, out)
        return out

    return core.eval_jaxpr(jaxpr, consts, *args, bind=bind)


def checkified(closed: ClosedJaxpr, sites, enabled, n_prefix: int = 0, after=None):
    """``closed`` as a jaxpr taking and returning the error state over ``sites`` first, and the
    sites its error has at the end. ``n_prefix`` leading arguments come before the error (loop
    constants); ``after(state, prefix, outs)`` may add checks on the outputs."""

    def run(*flat):
        prefix, rest = list(flat[:n_prefix]), flat[n_prefix:]
        state, args = ErrorState.unflatten(sites, rest)
        outs = checkify_jaxpr(closed.jaxpr, closed.consts, state, [*prefix, *args], enabled)
        if after is not None:
            after(state, prefix, outs)
        found.append(state.sites)
        return [*state.flat(), *outs]

    found: list = []
    in_avals = list(closed.in_avals)
    avals = [*in_avals[:n_prefix], *ErrorState.avals(sites), *in_avals[n_prefix:]]
    new = trace_to_jaxpr(run, avals)
    return new, found[-1]


def _fixpoint(make, sites):
    """Trace ``make(sites)`` until the sites it returns are the sites it was given: the jaxpr and
    its sites."""
    while True:
        closed, out_sites = make(sites)
        if out_sites == sites:
            return closed, sites
        sites = tuple(sorted(set(sites) | set(out_sites)))


def _check_nans(state, prim, out):
    outs = out if prim.multiple_results else [out]
    bad = [fnp.any(fnp.isnan(o)) for o in outs if fnp.issubdtype(o.dtype, fnp.inexact)]
    if bad:
        any_bad = bad[0]
        for b in bad[1:]:
            any_bad = fnp.logical_or(any_bad, b)
        state.add(any_bad, Site(NaNError, f"nan generated by primitive: {prim.name}.", None, ()))


# ----------------------------------------------------------------------------------------------
# Rules


def _check_rule(state, enabled, vals, params, prim):
    if FailedCheckError not in enabled:
        return []
    pred, *leaves = vals
    n = params["batch_ndim"]
    fail = fnp.logical_not(pred)
    if n:  # a check vmapped inside the checkified function: the first failing element's values
        i = fnp.argmax(fnp.ravel(fail))
        leaves = [fnp.reshape(v, (-1, *fnp.shape(v)[n:]))[i] for v in leaves]
    avals = tuple(ShapedArray(fnp.shape(v), fnp.result_type(v)) for v in leaves)
    state.add(fnp.any(fail), Site(FailedCheckError, params["msg"], params["fmt_tree"], avals), leaves)
    return []


def _div_rule(state, enabled, vals, params, prim):
    if DivisionByZeroError in enabled:
        state.add(fnp.any(fnp.equal(vals[1], 0)), Site(DivisionByZeroError, "division by zero", None, ()))
    out = prim.bind(*vals, **params)
    if NaNError in enabled:
        _check_nans(state, prim, out)
    return out


def _oob(state, prim_name, operand_shape, indices, dims_map, upper):
    """Record an out-of-bounds error where ``indices[..., k]`` (an index into operand axis
    ``dims_map[k]``) is negative or above ``upper[k]``; the payload is the first such index, its
    axis and the axis' size, int32 as JAX's. Computed in the indices' dtype with every shape
    explicit, so the user's promotion settings (rank promotion 'raise', strict dtypes) never
    refuse the check's own arithmetic."""
    indices = fnp.asarray(indices)
    n = max(len(dims_map), 1)
    bound = np.minimum(np.asarray(upper, np.int64), np.iinfo(indices.dtype).max).astype(indices.dtype)
    bound = bound.reshape((1,) * (indices.ndim - 1) + (len(upper),))  # (the leading axes explicit)
    mask = fnp.logical_or(indices < 0, indices > bound)
    flat_mask = fnp.ravel(mask)
    i = fnp.argmax(flat_mask)
    k = i % n
    axis = fnp.asarray(np.asarray(dims_map, np.int32))[k]
    size = fnp.asarray(np.asarray(operand_shape, np.int32)[list(dims_map)])[k]
    site = Site(OOBError, OOB_MSG.format(tuple(operand_shape)), None, _OOB_PAYLOAD)
    state.add(fnp.any(flat_mask), site, (fnp.ravel(indices)[i].astype(np.int32), axis, size))


def _starts(starts):
    """Scalar start indices as one vector, in the widest of their dtypes (JAX's ``jnp.array`` of
    them; each converted first, so strict dtype promotion does not refuse the mix)."""
    dtype = np.result_type(*(np.dtype(fnp.asarray(s).dtype) for s in starts))
    return fnp.stack([fnp.asarray(s).astype(dtype) for s in starts])


def _gather_rule(state, enabled, vals, params, prim):
    out = prim.bind(*vals, **params)
    if OOBError in enabled:
        operand, indices = vals
        shape = fnp.shape(operand)
        dims = params["dimension_numbers"].start_index_map
        if dims:
            upper = [shape[d] - params["slice_sizes"][d] for d in dims]
            _oob(state, prim.name, shape, indices, dims, upper)
    return out


def _dynamic_slice_rule(state, enabled, vals, params, prim):
    out = prim.bind(*vals, **params)
    if OOBError in enabled and len(vals) > 1:
        operand, *starts = vals
        shape = fnp.shape(operand)
        upper = [n - s for n, s in zip(shape, params["slice_sizes"])]
        _oob(state, prim.name, shape, _starts(starts), range(len(shape)), upper)
    return out


def _dynamic_update_slice_rule(state, enabled, vals, params, prim):
    out = prim.bind(*vals, **params)
    if OOBError in enabled and len(vals) > 2:
        operand, update, *starts = vals
        shape = fnp.shape(operand)
        upper = [n - u for n, u in zip(shape, fnp.shape(update))]
        _oob(state, prim.name, shape, _starts(starts), range(len(shape)), upper)
    return out


def _scatter_rule(state, enabled, vals, params, prim):
    out = prim.bind(*vals, **params)
    operand, indices, updates = vals
    dn = params["dimension_numbers"]
    if OOBError in enabled and dn.scatter_dims_to_operand_dims:
        shape = fnp.shape(operand)
        # The window: operand axes that are neither inserted nor batching axes, in order, take the
        # sizes of the update window axes.
        window_axes = [
            d
            for d in range(len(shape))
            if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
        ]
        win = dict(zip(window_axes, (fnp.shape(updates)[d] for d in dn.update_window_dims)))
        dims = dn.scatter_dims_to_operand_dims
        upper = [shape[d] - win.get(d, 1) for d in dims]
        _oob(state, prim.name, shape, indices, dims, upper)
    if NaNError in enabled:
        _check_nans(state, prim, out)
    return out


def _call_rule(state, enabled, vals, params, prim):
    """``jit``/``checkpoint``: the same call, of the checkified jaxpr."""
    closed = params["jaxpr"]
    new, sites = checkified(closed, state.sites, enabled)
    args = [*state.flat(), *vals]
    outs = prim.bind(*args, **prim.derive_params(params, new, "checkify", len(args)))
    new_state, outs = ErrorState.unflatten(sites, outs)
    _replace(state, new_state)
    return outs


def _custom_call_rule(state, enabled, vals, params, prim):
    closed = params["call_jaxpr"]
    _, sites = checkified(closed, (), enabled)
    if not sites:  # nothing to check inside: keep the custom derivative
        return prim.bind(*vals, **params)
    return checkify_jaxpr(closed.jaxpr, closed.consts, state, vals, enabled)


def _cond_rule(state, enabled, vals, params, prim):
    index, *ops = vals
    branches = params["branches"]

    sites = state.sites
    while True:  # every branch returns the error over the union of the sites any branch reaches
        made = [checkified(b, sites, enabled) for b in branches]
        union = tuple(sorted(set(sites).union(*(s for _, s in made))))
        if union == sites:
            break
        sites = union
    new_branches = tuple(m for m, _ in made)
    outs = prim.bind(index, *state.flat(sites), *ops, **{**params, "branches": new_branches})
    new_state, outs = ErrorState.unflatten(sites, outs)
    _replace(state, new_state)
    return outs


def _scan_rule(state, enabled, vals, params, prim):
    nc = params["num_consts"]
    consts, rest = vals[:nc], vals[nc:]

    def make(sites):
        return checkified(params["jaxpr"], sites, enabled, n_prefix=nc)

    body, sites = _fixpoint(make, state.sites)
    n_err = len(ErrorState.avals(sites))
    outs = prim.bind(
        *consts,
        *state.flat(sites),
        *rest,
        **{**params, "jaxpr": body, "num_carry": params["num_carry"] + n_err},
    )
    new_state, outs = ErrorState.unflatten(sites, outs)
    _replace(state, new_state)
    return outs


def _while_rule(state, enabled, vals, params, prim):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cconsts, bconsts, init = vals[:cn], vals[cn : cn + bn], vals[cn + bn :]
    cond, body = params["cond_jaxpr"], params["body_jaxpr"]
    if cond.out_avals[0].shape:  # (a batched predicate: NOTE: [batched while predicates])
        raise ValueError(  # (JAX's words: a while loop vmapped with a batched predicate)
            "Checkify does not support batched while-loops (checkify-of-vmap-of-while). \nHint: if "
            "possible, move the vmap to the outer level to get vmap-of-checkify-of-while."
        )
    # The condition on the initial carry, checked before the loop.
    checkify_jaxpr(cond.jaxpr, cond.consts, state, [*cconsts, *init], enabled)

    def check_cond(st, prefix, outs):
        checkify_jaxpr(cond.jaxpr, cond.consts, st, [*prefix[:cn], *outs], enabled)

    # The body takes (cond consts, body consts, error, carry): it runs the body, then the condition
    # on the new carry, so a failing condition is recorded in the iteration that made its input.
    body_in = ClosedJaxpr(
        Jaxpr(
            body.jaxpr.constvars,
            [*cond.jaxpr.invars[:cn], *body.jaxpr.invars],
            body.jaxpr.eqns,
            body.jaxpr.outvars,
        ),
        body.consts,
    )
    new_body, sites = _fixpoint(
        lambda s: checkified(body_in, s, enabled, n_prefix=cn + bn, after=check_cond), state.sites
    )

    def plain_cond(*flat):
        cc, rest = flat[:cn], flat[cn:]
        _, carry = ErrorState.unflatten(sites, rest)
        # The condition's checks ran in the body already: here nothing is checked.
        return checkify_jaxpr(cond.jaxpr, cond.consts, ErrorState(), [*cc, *carry], frozenset())

    new_cond = trace_to_jaxpr(
        plain_cond, [*cond.in_avals[:cn], *ErrorState.avals(sites), *cond.in_avals[cn:]]
    )
    outs = prim.bind(
        *cconsts,
        *cconsts,
        *bconsts,
        *state.flat(sites),
        *init,
        **{**params, "cond_jaxpr": new_cond, "body_jaxpr": new_body, "body_nconsts": cn + bn},
    )
    new_state, outs = ErrorState.unflatten(sites, outs)
    _replace(state, new_state)
    return outs


def _shard_map_rule(state, enabled, vals, params, prim):
    """As JAX's: the body is checkified, the error enters every device replicated and leaves with
    one block per device (a leading dimension split over the manual mesh axes); the first
    device that failed gives the error (its code and payloads)."""
    mesh, manual = params["mesh"], shp.manual_of(params["mesh"], params["manual_axes"])
    with batching.extend_axis_env(shp.mesh_frames(mesh, manual)):
        inner, sites = checkified(params["jaxpr"], state.sites, enabled)
        n_out = len(ErrorState.avals(sites))

        def per_device(*flat):
            outs = core.eval_jaxpr(inner.jaxpr, inner.consts, *flat)
            return [*(fnp.expand_dims(e, 0) for e in outs[:n_out]), *outs[n_out:]]

        body = trace_to_jaxpr(per_device, inner.in_avals)
    in_errs = state.flat()
    outs = prim.bind(
        *in_errs,
        *vals,
        **{
            **params,
            "jaxpr": body,
            "in_specs": (*(((),) * fnp.ndim(e) for e in in_errs), *params["in_specs"]),
            "out_specs": (
                *((manual, *((),) * (a.ndim - 1)) for a in body.out_avals[:n_out]),
                *params["out_specs"],
            ),
        },
    )
    errs, outs = outs[:n_out], outs[n_out:]
    first = fnp.argmax(errs[0])  # the first device whose error is set (device 0 when none is)
    _replace(state, ErrorState.unflatten(sites, [fnp.any(errs[0])] + [e[first] for e in errs[1:]])[0])
    return outs


def _replace(state: ErrorState, new: ErrorState) -> None:
    state.err, state.code, state.payloads = new.err, new.code, new.payloads


RULES = {
    check_p: _check_rule,
    custom_jvp_call_p: _custom_call_rule,
    custom_vjp_call_p: _custom_call_rule,
    ew.div_p: _div_rule,
    cf.cond_p: _cond_rule,
    scan_p: _scan_rule,
    cf.while_p: _while_rule,
    shp.shard_map_p: _shard_map_rule,
    ga.gather_p: _gather_rule,
    ix.dynamic_slice_p: _dynamic_slice_rule,
    ix.dynamic_update_slice_p: _dynamic_update_slice_rule,
}
for _p in (sc.scatter_p, ga.scatter_add_p, sc.scatter_mul_p, sc.scatter_min_p, sc.scatter_max_p):
    RULES[_p] = _scatter_rule
