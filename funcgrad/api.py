"""The public transformations: grad, value_and_grad, vjp, jvp, linearize, vmap, jacfwd, jacrev,
hessian, make_jaxpr, eval_shape, stop_gradient, linear_transpose, device_put (and, from sibling
modules, jit, ShapeDtypeStruct, custom_jvp, custom_vjp, checkpoint).

Layer: surface, the face of the transformations. Defined here: the Jacobians and the Hessian
(compositions of ``jvp``/``vjp`` and ``vmap``), ``make_jaxpr``, ``eval_shape`` and the value
functions (``device_put``, ``device_get``, ``block_until_ready``). Re-exported from the floor
below: the differentiation transformations (``funcgrad._autodiff``), ``vmap``
(``funcgrad._vmap``), ``jit`` (``funcgrad.jitting``), ``checkpoint`` (``funcgrad._remat``) and the
custom derivative rules (the kernel). Imports the kernel, the primitive catalog, funcgrad.numpy,
the shared argument handling of ``funcgrad._api_util`` and (for ``device_put`` to a device)
``xla_bridge``.

Every function here accepts and returns pytrees; the kernel works on flat lists, so each one
flattens its inputs, runs the flat transformation, and unflattens. Errors name the
transformation, the argument (by position and pytree path) and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp  # also installs Array/Tracer operators (NOTE: [array methods])
import funcgrad.numpy._core as fnp_core
from funcgrad import (
    _effects,
    _key_reuse,
    _layouts,
    _placement,  # installs Array.sharding, .devices(), ... (see its docstring)
    _transfer_guard,
    xla_bridge,
)
from funcgrad import _shard_map_eager as _sm_eager
from funcgrad._aot import abstract_keys
from funcgrad._api_util import (
    JACOBIAN_DOC,
    abstractify,
    check_array_leaves,
    check_output_dtype,
    flat_fun,
    flatten_outputs,
    is_abstract,
    named_arg_paths,
    normalize_argnums,
    partial_over,
    signature_arg_names,
    to_public,
    user_transformation,
    wraps,
)
from funcgrad._autodiff import (
    _check_grad_inputs,
    grad,
    jvp,
    linear_transpose,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
)
from funcgrad._ref_errors import refuse_returned_refs
from funcgrad._ref_scopes import HITYPES, is_stateful_arg, lower_hi_values, trace_stateful
from funcgrad._remat import checkpoint, remat  # noqa: F401 - re-exported
from funcgrad._shardings import PartitionSpec, Sharding
from funcgrad._vmap import vmap
from funcgrad.jitting import ShapeDtypeStruct, jit  # noqa: F401 - re-exported
from funcgrad.kernel import batching, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401 - re-exported
from funcgrad.kernel.held_state import is_state
from funcgrad.primitives import elementwise as _ew
from funcgrad.primitives import stacking as sk
from funcgrad.ref import abstract_ref
from funcgrad.tree_util import _prefix_error

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "linearize",
    "linear_transpose",
    "vmap",
    "jacfwd",
    "jacrev",
    "jacobian",
    "hessian",
    "make_jaxpr",
    "stop_gradient",
    "jit",
    "custom_jvp",
    "custom_vjp",
    "checkpoint",
    "remat",
    "eval_shape",
    "ShapeDtypeStruct",
    "device_put",
    "device_get",
    "block_until_ready",
]


# ----------------------------------------------------------------------------------------------
# Jacobians and Hessians


def _std_basis(leaves):
    """The identity matrix split per leaf: leaf i gets shape (N, *leaf_shape).

    Under a trace (``jit`` of a Jacobian) the identity is part of the program, ``iota == iota``
    converted, as JAX's ``jnp.eye``: XLA then turns each product with it into a select, so the
    Jacobian's entries off the diagonal are 0 where the derivative is NaN or inf (JAX's jitted
    values; eagerly 0 * NaN is NaN in both)."""
    avals = [core.get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    total = int(sum(sizes))
    dtype = _dt.result_type(*[(a.dtype, False) for a in avals])[0] if avals else _dt.float64
    traced = any(isinstance(x, core.Tracer) for x in leaves)
    eye = fnp.eye(total, dtype=dtype) if traced else np.eye(total, dtype=dtype)
    out, start = [], 0
    for a, s in zip(avals, sizes):
        # (of the leaf's weak type too, as JAX's _possible_downcast: a Python scalar's tangents
        # are weak, so a float32 value they scale stays float32)
        piece = eye[:, start : start + s].reshape((total, *a.shape)).astype(a.dtype)
        out.append(_typed_like(piece, a) if a.weak_type else piece)
        start += s
    return out


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian by forward mode (vmap of jvp over the input basis); result blocks have shape
    ``out.shape + in.shape``. Inputs must be real unless ``holomorphic=True`` (complex inputs and
    outputs of a holomorphic function; NOTE: [differentiation dtypes]).

    >>> import funcgrad.numpy as fnp
    >>> jacfwd(lambda x: x ** 2)(fnp.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """

    @wraps(fun, docstr=JACOBIAN_DOC, argnums=argnums)
    def jacfun(*args, **kwargs):
        nums = normalize_argnums("jacfwd", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacfwd", dyn, nums, holomorphic, allow_int=False, forward=True)
        _rebuild_as_jax_checks(dyn)
        f = partial_over(fun, args, kwargs, nums)
        flat_in, in_tree = tu.tree_flatten(dyn)
        in_avals = [core.get_aval(x) for x in flat_in]
        basis = _std_basis(flat_in)

        def push(*tangent_leaves):
            tangents = tu.tree_unflatten(in_tree, tangent_leaves)
            if has_aux:
                y, t, aux = jvp(f, dyn, tangents, has_aux=True)
                return y, t, aux
            y, t = jvp(f, dyn, tangents)
            return y, t

        axes = (None, -1, None) if has_aux else (None, -1)
        with user_transformation("jacfwd", fun):
            res = vmap(push, in_axes=0, out_axes=axes)(*basis)
        y, jac = res[0], res[1]
        y_leaves, out_tree = tu.tree_flatten(y)
        for leaf in y_leaves:
            check_output_dtype("jacfwd", core.get_aval(leaf), holomorphic=holomorphic, forward=True)
        _rebuild_as_jax_checks(y)
        jac_leaves = tu.tree_leaves(jac)
        result = _assemble_jacobian(
            jac_leaves,
            [core.get_aval(o) for o in y_leaves],
            in_avals,
            in_tree,
            out_tree,
            isinstance(argnums, int),
        )
        return (result, res[2]) if has_aux else result

    return jacfun


def _rebuild_as_jax_checks(tree) -> None:
    """JAX's jacfwd/jacrev check the inputs' and outputs' dtypes with ``tree_map``, which rebuilds
    each pytree with the checks' ``None`` results: a custom node's unflatten runs with ``None``
    children, and one that refuses them raises there as in JAX (custom_pytrees.md: a ``MyTree``
    whose ``__init__`` calls ``jnp.asarray`` raises ValueError 'None is not a valid value for
    jnp.array' from ``jax.jacobian(lambda x: x)(tree)``)."""
    tu.tree_map(lambda _: None, tree)


def _assemble_jacobian(jac_leaves, out_avals, in_avals, in_tree, out_tree, single_arg):
    """Split per-output Jacobians, stacked along a last flattened-input axis, into
    ``out.shape + in.shape`` blocks per input leaf."""
    sizes = [a.size for a in in_avals]
    per_out = []
    for jac, oa in zip(jac_leaves, out_avals):
        blocks = []
        # (one split of the last axis, as JAX's _unravel_array_into_pytree: its transpose
        # concatenates, so a Python scalar input's derivative through a block stays weak)
        pieces = sk.split(jac, sizes, core.get_aval(jac).ndim - 1)
        for ia, piece in zip(in_avals, pieces):
            piece = fnp.reshape(piece, (*oa.shape, *ia.shape))
            blocks.append(to_public(_typed_like(piece, oa)))
        tree = tu.tree_unflatten(in_tree, blocks)
        per_out.append(tree[0] if single_arg else tree)
    return tu.tree_unflatten(out_tree, per_out)


def _typed_like(block, example: ir.ShapedArray):
    """A Jacobian block with the weak type of the leaf JAX types it after (jacfwd: the output
    leaf, jacrev: the input leaf), so ``jacfwd(jnp.sin)(1.0)`` is weakly typed as in JAX."""
    aval = core.get_aval(block)
    if aval.dtype == _dt.float0 and example.dtype != _dt.float0:
        # (JAX casts the block to the leaf's dtype: an integer output's (jacfwd) or an integer
        # input's (jacrev with allow_int) Jacobian is zeros of that integer type; a boolean one
        # fails inside JAX's cast of float0, with a TypeError)
        if example.dtype == np.bool_:
            raise TypeError(
                "a bytes-like object is required, not 'int' (JAX's cast of a float0 Jacobian to bool)"
            )
        return to_public(fnp_core.constant(0, example.dtype, aval.shape, weak_type=example.weak_type))
    if aval.dtype != example.dtype or aval.weak_type == example.weak_type:
        return block
    if type(block) is Array:  # (eagerly a result's weak type follows its operands': set it here)
        return Array._from_owned(block._numpy(), example.weak_type)
    return _ew.convert_element_type(block, example.dtype, example.weak_type)


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """The Jacobian by reverse mode (vmap of the vjp function over the output basis). Outputs must
    be real unless ``holomorphic=True`` (NOTE: [differentiation dtypes]).

    >>> import funcgrad.numpy as fnp
    >>> jacrev(lambda x: x ** 2)(fnp.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """

    @wraps(fun, docstr=JACOBIAN_DOC, argnums=argnums)
    def jacfun(*args, **kwargs):
        nums = normalize_argnums("jacrev", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacrev", dyn, nums, holomorphic, allow_int)
        _rebuild_as_jax_checks(dyn)
        f = partial_over(fun, args, kwargs, nums)
        with user_transformation("jacrev", fun):
            if has_aux:
                y, f_vjp, aux = vjp(f, *dyn, has_aux=True)
            else:
                y, f_vjp = vjp(f, *dyn)
        y_leaves, out_tree = tu.tree_flatten(y)
        flat_in, in_tree = tu.tree_flatten(dyn)
        in_avals = [core.get_aval(x) for x in flat_in]
        out_avals = [core.get_aval(o) for o in y_leaves]
        for a in out_avals:
            check_output_dtype("jacrev", a, holomorphic=holomorphic)
        _rebuild_as_jax_checks(y)
        basis = _std_basis(y_leaves)

        def pull(*ct_leaves):
            return tu.tree_leaves(f_vjp(tu.tree_unflatten(out_tree, ct_leaves)))

        cts = vmap(pull)(*basis)  # per input leaf: (M, *in_shape)
        # Rearrange to per-output blocks: out.shape + in.shape.
        m_sizes = [a.size for a in out_avals]
        # (one split of the first axis per input leaf, as JAX's _jacrev_unravel)
        cts = [sk.split(ct, m_sizes, 0) for ct in cts]
        per_out = []
        for k, oa in enumerate(out_avals):
            blocks = [
                to_public(_typed_like(fnp.reshape(ct[k], (*oa.shape, *ia.shape)), ia))
                for ct, ia in zip(cts, in_avals)
            ]
            tree = tu.tree_unflatten(in_tree, blocks)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
        result = tu.tree_unflatten(out_tree, per_out)
        return (result, aux) if has_aux else result

    return jacfun


jacobian = jacrev


def hessian(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
):
    """The Hessian, as ``jacfwd(jacrev(fun))`` (forward-over-reverse); ``holomorphic=True`` for a
    holomorphic function of complex inputs.

    >>> import funcgrad.numpy as fnp
    >>> hessian(lambda x: (x ** 3).sum())(fnp.array([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
    outer = jacfwd(inner, argnums, has_aux=has_aux, holomorphic=holomorphic)

    @wraps(fun)
    def hessian_f(*args, **kwargs):
        with user_transformation("hessian", fun, sealed=True):
            return outer(*args, **kwargs)

    return hessian_f


# ----------------------------------------------------------------------------------------------
# Staging


def make_jaxpr(
    fun: Callable, static_argnums: int | Sequence[int] = (), axis_env=None, return_shape: bool = False
):
    """``make_jaxpr(f)(*args)`` is the jaxpr of ``f`` at the shapes/dtypes of ``args``; its
    ``str()`` reads like JAX's. Works on transformed functions: ``make_jaxpr(grad(f))`` shows the
    backward program. ``axis_env``: ``[(name, size), ...]``, named axes bound while tracing (so
    collectives such as ``lax.psum(x, name)`` can be staged outside a vmap/shard_map).

    >>> import funcgrad.numpy as fnp
    >>> print(make_jaxpr(fnp.sin)(1.0))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    >>> from funcgrad import lax
    >>> print(make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", 4)])(1.0))
    { lambda ; a:f64[]. let b:f64[] = psum[axis_name=('i',)] a in (b,) }
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    frames = [(name, int(size)) for name, size in (axis_env or ())]

    @wraps(fun)
    def make(*args, **kwargs):
        nums = tuple(i for i in range(len(args)) if i not in statics)
        dyn = tuple(args[i] for i in nums)
        f = partial_over(fun, args, kwargs, nums)
        if HITYPES:  # (immutable high-level values as their low-level values, as jit's)
            dyn, f = lower_hi_values(dyn), _lowering_results(f)
        flat_in, in_tree = tu.tree_flatten(dyn)
        flat_in = [abstract_ref(x) for x in flat_in]  # (ShapeDtypeStruct(is_ref=True): a Ref)
        names = named_arg_paths(fun, dyn, nums)
        # (a ShapeDtypeStruct or ShapedArray stands for its abstract value, a ShapeDtypeStruct's
        # sharding included, as in JAX)
        check_array_leaves("make_jaxpr", [0 if is_abstract(x) else x for x in flat_in], names)
        flat, store = flat_fun(f, in_tree)
        # The trace is a ref scope, as jit's (NOTE: [refs are functionalised at trace time]): each
        # Ref argument's value is an input, each Ref closed over and touched a constant holding
        # its value now, and the final values of those written extra outputs after the function's
        # (JAX prints ref_get/ref_swap equations on Ref-typed variables), with JAX's effects.
        refs = {i: x for i, x in enumerate(flat_in) if is_stateful_arg(x)}
        avals = [None if i in refs else abstractify(x) for i, x in enumerate(flat_in)]
        description = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
        with batching.extend_axis_env(frames):
            closed, n_outs, plan = trace_stateful(
                flat, avals, names, description, refs, fun, "make_jaxpr", dce=False
            )
        if plan is not None:
            closed = _with_ref_effects(closed, plan, [refs.get(i) for i in range(len(flat_in))])
        if return_shape:
            shapes = tu.tree_unflatten(
                store["out_tree"], [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals[:n_outs]]
            )
            return closed, shapes
        return closed

    for attr in ("__qualname__", "__name__"):  # (JAX's names: make_jaxpr(f))
        if isinstance(getattr(fun, attr, None), str):
            setattr(make, attr, f"make_jaxpr({getattr(fun, attr)})")
    return make


def _lowering_results(f):
    """``f`` whose immutable high-level results go out as their low-level values."""
    return lambda *args, **kwargs: lower_hi_values(f(*args, **kwargs))


def _with_ref_effects(closed: ir.ClosedJaxpr, plan, flat_in: list) -> ir.ClosedJaxpr:
    """make_jaxpr's program of a function that touched Refs (``plan``, a ``RefPlan``; ``flat_in``:
    the Ref (or mutable box) or None at each flat argument): the closed-over Refs' inputs become
    constants holding their values now, and the program names JAX's effects, a ``ReadEffect`` per
    Ref and a ``WriteEffect`` per Ref written, on the variable of its (first) value."""
    j = closed.jaxpr
    lifted = [item._state_read() for item in plan.lifted]
    n_args = len(j.invars) - sum(map(len, lifted))
    boxes = {b[0]: len(b[1].lo_ty_qdd(b[2])) for b in plan.boxes}  # (a box argument's inputs)
    ref_vars, k = [], 0  # the first variable of each Ref (arguments, then lifted: plan.written's order)
    for i, x in enumerate(flat_in):
        if x is not None and is_state(x):
            ref_vars.append(j.invars[k])
        k += 1 if x is None else len(x._leaf_avals) if is_state(x) else boxes[i]
    for item, vals in zip(plan.lifted, lifted):
        if is_state(item):
            ref_vars.append(j.invars[k])
        k += len(vals)
    effects = {_effects.ReadEffect(v) for v in ref_vars}
    effects |= {_effects.WriteEffect(ref_vars[w]) for w in plan.written}
    jaxpr = ir.Jaxpr([*j.constvars, *j.invars[n_args:]], j.invars[:n_args], j.eqns, j.outvars, effects)
    return ir.ClosedJaxpr(jaxpr, [*closed.consts, *(x for vals in lifted for x in vals)])


def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes and dtypes of ``fun(*args)`` without computing anything.

    >>> import funcgrad.numpy as fnp
    >>> eval_shape(lambda x: x @ x.T, ShapeDtypeStruct((3, 4), "float32"))
    ShapeDtypeStruct(shape=(3, 3), dtype=float32)
    """
    args, kwargs = abstract_keys((args, kwargs))
    flat_in, in_tree = tu.tree_flatten((args, kwargs), lambda x: isinstance(x, ShapeDtypeStruct))
    flat_in = [abstract_ref(x) for x in flat_in]  # (ShapeDtypeStruct(is_ref=True): a Ref of its type)
    # Refs and mutable boxes are state, traced as jit traces them (NOTE: [refs are functionalised
    # at trace time]); nothing runs, so nothing is written back.
    state = {i: x for i, x in enumerate(flat_in) if is_stateful_arg(x)}
    # an abstract value (``ShapedArray``) stands for itself, as in JAX (flax passes one)
    avals = [None if i in state else abstractify(x) for i, x in enumerate(flat_in)]
    # An output that is already a ShapeDtypeStruct (eval_shape of a function returning the result
    # of another eval_shape, as lineax does) is its own answer, as in JAX: it is set aside while
    # tracing (a 0 holds its place) and put back.
    given = {}

    def traced(a, k):
        out = fun(*a, **k)
        if any(is_state(x) for x in tu.tree_leaves(out)):  # (JAX's ValueError, naming the argument)
            names = dict(zip(map(id, tu.tree_leaves((a, k))), signature_arg_names(fun, a, k)))
            refuse_returned_refs(out, "eval_shape", fun, "jit", names)
        leaves, tree = tu.tree_flatten(out)
        given.update((i, x) for i, x in enumerate(leaves) if isinstance(x, ShapeDtypeStruct))
        # (a high-level result's answer is its type, as JAX's: hijax_test test_eval_shape)
        given.update((i, HITYPES[type(x)](x)) for i, x in enumerate(leaves) if type(x) in HITYPES)
        kept = [0 if i in given else x for i, x in enumerate(leaves)]
        flatten_outputs(tu.tree_unflatten(tree, kept), "eval_shape", fun)  # (JAX's words for a non-array)
        return tu.tree_unflatten(tree, kept)

    flat, store = flat_fun(traced, in_tree)
    closed, n_outs, _ = trace_stateful(flat, avals, None, "eval_shape", state)
    return tu.tree_unflatten(
        store["out_tree"],
        [
            given[i]
            if i in given
            else a  # (a token's type stands for itself, as JAX's)
            if a is ir.abstract_token
            else ShapeDtypeStruct(
                a.shape,
                a.dtype,
                a.weak_type,
                sharding=a._sharding,
                manual_axis_type=None if a.mat.empty else a.mat,  # (a checked shard_map body's value)
            )
            for i, a in enumerate(closed.out_avals[:n_outs])
        ],
    )


# ----------------------------------------------------------------------------------------------
# Values


def _device_put_tree(x, device):
    """``device_put`` with a pytree prefix of ``x`` of devices and ``None`` (JAX's
    ``flatten_axes("device_put device", ...)``): each leaf placed as its entry says."""
    leaves, tree = tu.tree_flatten(x)
    try:
        entries = tu.broadcast_prefix(device, x, is_leaf=lambda d: d is None)
    except ValueError:
        raise _prefix_error(
            "device_put device", device, x, f"the devices {device!r} do not match {tree}"
        ) from None
    return tu.tree_unflatten(tree, [device_put(v, d) for v, d in zip(leaves, entries)])


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Make every leaf of ``x`` an ``Array``; with ``device`` (one of ``funcgrad.devices()``), a
    copy held in that device's memory; with a ``Sharding`` (or a pytree prefix of ``x`` of them),
    each leaf laid out over the devices as it says (``NamedSharding(mesh, P("x"))``: split along
    the mesh axis "x"). Leaves that are not arrays (``"abc"``) and devices that are not devices
    (``"cpu"``) raise ``TypeError``; a shape the sharding does not divide raises ``ValueError``.
    ``src``, ``donate`` and ``may_alias`` are JAX's keywords: funcgrad never deletes ``x`` (a
    donation is a permission, not a promise) and a placed value never aliases a NumPy argument;
    ``may_alias=False`` makes a copy of an Array that would come back as it is (JAX's rule), and
    ``may_alias=True`` with ``donate=True`` is JAX's ValueError.

    >>> import funcgrad
    >>> device_put({"w": 1.0, "b": [2, 3]}, funcgrad.devices()[0])["b"][1]
    Array(3, dtype=int64, weak_type=True)
    >>> a = funcgrad.numpy.ones(2)
    >>> device_put(a) is a, device_put(a, may_alias=False) is a
    (True, False)
    """
    del src  # (see the docstring)
    if may_alias and donate:
        raise ValueError("may_alias and donate cannot be True at the same time.")  # (JAX's words)
    if device is not None and isinstance(core.current_trace(), _sm_eager.ShardMapTrace):
        # (JAX's eager shard_map rule of device_put: under jit the placement is ignored)
        first = next((d for d in tu.tree_leaves(device) if d is not None), device)
        raise ValueError(
            "device_put with explicit device not allowed within shard_map-decorated functions, but got "
            f"device {first}"
        )
    out = _device_put(x, device)
    if may_alias is False and type(core.current_trace()) is core.EvalTrace:
        out = tu.tree_map(lambda o, v: fnp.array(o, copy=True) if o is v else o, out, x)
    if _key_reuse.active():  # (placed keys are the same keys: NOTE: [key reuse])
        for new, old in zip(_key_reuse.keys_in(out), _key_reuse.keys_in(x)):
            _key_reuse.alias(new, old)
    return out


def _device_put(x, device):
    if isinstance(device, _placement.Space):  # funcgrad.memory.Space: a memory of x's own device
        return _placement.device_put_space(x, device)
    if device is not None:
        device = _layouts._formats_as_shardings(x, device)  # a Format places by its sharding
    if device is not None and not isinstance(device, xla_bridge.sharded.Device):
        if any(
            isinstance(s, Sharding | PartitionSpec)  # a bare spec: over the mesh in scope (set_mesh)
            for s in tu.tree_leaves(device, is_leaf=lambda s: isinstance(s, Sharding | PartitionSpec))
        ):
            return _placement.device_put_sharded(x, device)
    if isinstance(device, dict | list | tuple):
        return _device_put_tree(x, device)  # (a pytree prefix of x of devices and None, as JAX's)
    if device is not None:
        try:
            xla_bridge.resolve_device(device=device)
        except (TypeError, ValueError) as e:
            raise ValueError(  # (jax's type and words for a device that is not one, then funcgrad's)
                "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`, `Format`, "
                f"`jax.memory.Space` or a pytree of these values. Received invalid value: {device}\n"
                f"device_put: device must be one of funcgrad.devices() (or None), e.g. "
                f"funcgrad.devices('cpu')[0] ({e})"
            ) from None
    leaves, tree = tu.tree_flatten(x)
    for i, v in enumerate(leaves):
        if type(v) is np.ma.MaskedArray:  # (JAX's error: the mask would be dropped silently)
            raise ValueError(
                "numpy masked arrays are not supported as direct inputs to JAX functions. Use "
                "arr.filled() to convert the value to a standard numpy array."
            )
        if not core.is_array_like(v) and type(v) is not core.Token:
            path = tu.keystr(tu.tree_leaves_with_path(x)[i][0])
            if isinstance(v, str) or hasattr(v, "dtype"):  # (JAX's words first)
                head = f"Argument '{v!s:.60}' of type {type(v)} is not a valid JAX type"
            else:
                head = (
                    f"Cannot interpret value of type {type(v)} as an abstract array; it does not have a "
                    "dtype attribute"
                )
            raise TypeError(
                f"{head} (device_put: x{path} is not an array; funcgrad arrays hold numbers: bool, int, "
                "float, complex or arrays of them)"
            )

    guarded = _transfer_guard.state.host_to_device or _transfer_guard.guarding("device_to_device")
    if guarded and type(core.current_trace()) is not core.EvalTrace:
        guarded = False  # (under a transformation a value is placed by the staged program)

    def put(v):
        if type(v) is core.Token:
            return v  # (a token has no data to move: its buffer is made where a program takes it)
        if guarded:  # NOTE: [transfer guard]: device_put is the explicit transfer
            if type(v) is not Array:
                _transfer_guard.host_value(v, is_explicit=True, device=device)
            elif device is not None:
                _transfer_guard.device_value(v, device, is_explicit=True)
            with _transfer_guard.explicit():
                v = fnp.asarray(v)
        else:
            v = fnp.asarray(v)
        if device is None:
            return v
        if isinstance(v, core.Tracer):  # under grad/vmap: an equation whose transpose moves back
            return _placement.device_put_traced(v, device)
        buffer = xla_bridge.device_put(np.asarray(v), device, weak_type=v.weak_type)
        return Array._from_buffer(buffer, weak_type=v.weak_type)

    return tu.tree_unflatten(tree, [put(v) for v in leaves])


def device_get(x):
    """Every ``Array`` leaf of ``x`` as a NumPy array."""
    return tu.tree_map(lambda v: np.asarray(v) if isinstance(v, Array) else v, x)


def block_until_ready(x):
    """Wait until every Array leaf of ``x`` is computed; returns ``x``."""
    for leaf in tu.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
