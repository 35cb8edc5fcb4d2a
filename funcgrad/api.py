"""The public transformations: grad, value_and_grad, vjp, jvp, linearize, vmap, jacfwd, jacrev,
hessian, make_jaxpr, stop_gradient, linear_transpose (and, from sibling modules, jit,
ShapeDtypeStruct, custom_jvp, custom_vjp, checkpoint).

Layer: surface. Imports the kernel, the primitive catalog, funcgrad.numpy, the shared argument
handling of ``funcgrad._api_util`` and (for ``device_put`` to a device) ``xla_bridge``.

Every function here accepts and returns pytrees; the kernel works on flat lists, so each one
flattens its inputs, runs the flat transformation, and unflattens. Errors name the
transformation, the argument (by position and pytree path) and the fix.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp  # also installs Array/Tracer operators (NOTE: [array methods])
from funcgrad import (
    _placement,  # installs Array.sharding, .devices(), ... (see its docstring)
    xla_bridge,
)
from funcgrad import tree_util as _public_tree_util
from funcgrad._api_util import (
    abstractify,
    arg_paths,
    canonicalize,
    check_array_leaves,
    check_input_dtypes,
    check_output_dtype,
    check_scalar_output,
    flat_fun,
    instantiate_public,
    is_abstract,
    named_arg_paths,
    normalize_argnums,
    partial_over,
    split_aux,
    to_public,
    unit_cotangent,
    user_transformation,
    wraps,
)
from funcgrad._eager_grad import recorded_value_and_grad
from funcgrad._remat import checkpoint, remat  # noqa: F401 - re-exported
from funcgrad._shardings import PartitionSpec, Sharding
from funcgrad.jitting import ShapeDtypeStruct, jit  # noqa: F401 - re-exported
from funcgrad.kernel import ad, batching, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401 - re-exported
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives import elementwise as _ew
from funcgrad.primitives import sharding as _sharding_prims
from funcgrad.ref import is_stateful_arg, trace_stateful

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
# Forward mode


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), d fun(primals) · tangents)``.

    >>> import funcgrad.numpy as fnp
    >>> y, t = jvp(fnp.sin, (0.0,), (2.0,))
    >>> float(y), float(t)
    (0.0, 2.0)
    """
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(
            "jvp: primals and tangents must be tuples or lists of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}; write jvp(f, (x,), (t,))"
        )
    flat_p, tree_p = tu.tree_flatten(tuple(primals))
    flat_t, tree_t = tu.tree_flatten(tuple(tangents))
    if tree_p != tree_t:
        raise TypeError(
            f"jvp: primal and tangent arguments must have the same tree structure, got {tree_p} and {tree_t}"
        )
    paths = arg_paths(tuple(primals))
    check_array_leaves("jvp", flat_p, paths, "primal")  # (jvp names its tangents below too)
    raw_p, flat_p = flat_p, canonicalize(flat_p)
    tangents_in = []
    for p, t, path in zip(flat_p, flat_t, paths):
        pa, ta = core.get_aval(p), core.get_aval(t)
        expected = _dt.tangent_dtype(pa.dtype)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp: tangent {path} has shape {ta.shape} but its primal has shape {pa.shape}")
        # A Python scalar's (weak) tangent of the primal's kind passes, whatever its width (JAX
        # gives it the primal's width); another kind (an int tangent of a float) is JAX's TypeError.
        if ta.dtype != expected and not (ta.weak_type and ta.dtype.kind == expected.kind != "V"):
            raise TypeError(
                f"jvp: tangent {path} has dtype {ta.dtype.name} but its primal has dtype "
                f"{pa.dtype.name}, whose tangents have dtype {expected.name}"
            )
        if expected == _dt.float0:
            t = ad.Zero(ad.tangent_aval(pa))
        elif type(t) in _dt.python_scalar_types:  # a weak Array of the primal's width, as in JAX
            t = Array._from_owned(np.asarray(t, expected), weak_type=True)
        tangents_in.append(t)
    flat, store = flat_fun(fun, tree_p, has_aux, transform="jvp")
    # NOTE: [primals as the caller gave them] (the tangents too)
    with ad.given_primals([*flat_p, *tangents_in], [*raw_p, *flat_t]):
        out_p, out_t = ad.jvp_flat(_passing_through(flat, store), flat_p, tangents_in)
    n = store["n_out"]
    out_avals = [ad.tangent_aval(core.get_aval(p)) for p in out_p]
    _, aux = split_aux(out_p, store, has_aux)
    primals_out = _as_returned(out_p[:n], store, raw_p)
    tangents_out = tu.tree_unflatten(
        store["out_tree"],
        [
            flat_t[j] if j is not None else _tangent_out(t, a)
            for t, a, j in zip(out_t[:n], out_avals, store["through"])
        ],
    )
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


# NOTE: [outputs jvp and vjp return as they are]
# As JAX's, ``jvp``, ``vjp`` and ``linearize`` return what the function did not compute as it
# was: an input the function returns unchanged is the caller's own object (a Python float stays a
# float, a NumPy array a NumPy array) and, in ``jvp``, its tangent the caller's tangent; a
# constant the function returned (a Python scalar, a NumPy value), or one a ``custom_jvp`` rule
# returned as a primal or tangent, is that constant. Inputs are still canonicalised for the trace
# (``canonicalize``: rules never see Python numbers); ``_passing_through`` notes which outputs
# are the traced inputs themselves, and only the public results are mapped back. Computed outputs
# (a built-in rule's tangent that is an input tangent included: JAX's rules compute it) and the
# zero tangents of constants are Arrays.


def _tangent_out(t, aval):
    # A constant a custom or user rule returned (the caller's own tangent included) as it is.
    return t if _constant(t) else instantiate_public(t, aval)


def _passing_through(flat, store):
    """``flat`` noting, per output leaf, the index of the input it returns unchanged (or None)."""

    def run(*args):
        outs = flat(*args)
        store["through"] = [next((i for i, a in enumerate(args) if o is a), None) for o in outs]
        return outs

    return run


def _constant(x) -> bool:
    return type(x) in _dt.python_scalar_types or isinstance(x, np.ndarray | np.generic)


def _as_returned(leaves, store, raw):
    """The output leaves as JAX returns them (NOTE: [outputs jvp and vjp return as they are])."""
    through = store["through"]
    return tu.tree_unflatten(
        store["out_tree"],
        [raw[j] if j is not None else x if _constant(x) else to_public(x) for x, j in zip(leaves, through)],
    )


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the linearized function
    (a staged linear jaxpr; the primal work is not redone).

    >>> import funcgrad.numpy as fnp
    >>> y, f_jvp = linearize(fnp.exp, 0.0)
    >>> float(f_jvp(3.0))
    3.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    check_array_leaves("linearize", flat_p, lambda: arg_paths(primals))
    raw_p, flat_p = flat_p, canonicalize(flat_p)
    flat, store = flat_fun(fun, in_tree, has_aux, transform="linearize")
    with ad.given_primals(flat_p, raw_p):  # NOTE: [primals as the caller gave them]
        out_p, lin = ad.linearize_flat(_passing_through(flat, store), flat_p)
    n = store["n_out"]
    _, aux = split_aux(out_p, store, has_aux)
    out = _as_returned(out_p[:n], store, raw_p)

    # As JAX's, f_jvp is a ``tree_util.Partial`` whose leaves are the residuals, so it can be
    # returned from jit or vmap (equinox's checkpointed while_loop returns it from a jitted call).
    jvp_of = _LinearizedJVP(
        lin.closed.jaxpr, lin.in_avals, lin.out_avals, lin.out_zeros, in_tree, store["out_tree"], n
    )
    f_jvp = _public_tree_util.Partial(jvp_of, *lin.closed.consts)
    f_jvp.jaxpr = lin.closed
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


class _LinearizedJVP:
    """The function of ``linearize``'s ``f_jvp``: ``(*residuals, *tangents) -> output tangents``
    (its static part: the linear jaxpr and the trees; hashed by identity)."""

    def __init__(self, jaxpr, in_avals, out_avals, out_zeros, in_tree, out_tree, n_out):
        self.jaxpr, self.in_tree, self.out_tree, self.n_out = jaxpr, in_tree, out_tree, n_out
        self.avals = (list(in_avals), list(out_avals), list(out_zeros))
        self.__name__ = "f_jvp"

    def __call__(self, *args):
        k = len(self.jaxpr.constvars)
        residuals, tangents = args[:k], args[k:]
        flat_t, t_tree = tu.tree_flatten(tangents)
        if t_tree != self.in_tree:
            raise TypeError(
                f"linearize: tangents must have the primals' structure {self.in_tree}, got {t_tree}"
            )
        lin = ad.LinearFunction(ir.ClosedJaxpr(self.jaxpr, list(residuals)), *self.avals)
        outs = lin(*flat_t)
        n = self.n_out
        return tu.tree_unflatten(
            self.out_tree, [instantiate_public(o, a) for o, a in zip(outs[:n], lin.out_avals[:n])]
        )


# ----------------------------------------------------------------------------------------------
# Reverse mode


class VJPFunction:
    """The backward function returned by ``vjp``: call it with output cotangents, any number of
    times (PyTorch's ``retain_graph=True``). ``.jaxpr`` is the linear program it transposes and
    ``.residuals`` the values it keeps (``ctx.save_for_backward``)."""

    def __init__(self, lin: ad.LinearFunction, in_tree, out_tree, n_out: int):
        self._lin = lin  # (its transpose follows the context's convention, NOTE: [transpose conventions])
        self._in_tree = in_tree
        self._out_tree = out_tree
        self._n_out = n_out

    @property
    def jaxpr(self) -> ir.ClosedJaxpr:
        return self._lin.closed

    @property
    def residuals(self) -> list:
        return self._lin.residuals

    def __call__(self, cotangents):
        flat_ct, ct_tree = tu.tree_flatten(cotangents)
        if ct_tree != self._out_tree:
            raise TypeError(
                f"vjp function: the cotangent must have the output's tree structure "
                f"{self._out_tree}, got {ct_tree}"
            )
        avals = self._lin.out_avals[: self._n_out]
        for i, (ct, aval) in enumerate(zip(flat_ct, avals)):
            ca = core.get_aval(ct)
            expected = _dt.tangent_dtype(aval.dtype)
            # As in JAX: a cotangent has its output's shape and exactly its cotangent dtype (no
            # silent cast, which would hide a float32/float64 mix-up); any dtype stands for the
            # float0 cotangent of an integer output.
            if ca.shape != aval.shape or (expected != _dt.float0 and ca.dtype != expected):
                want = ir.ShapedArray(aval.shape, expected)
                path = tu.keystr(tu.tree_leaves_with_path(cotangents)[i][0]) or "(the whole cotangent)"
                raise ValueError(
                    f"vjp function: cotangent {path} has type {ca.str_short()}, but the function's "
                    f"output there has cotangent type {want.str_short()}; pass a cotangent of that "
                    f"shape and dtype (e.g. .astype({expected.name}))"
                )
        aux_zeros = [ad.Zero(a) for a in self._lin.out_avals[self._n_out :]]
        cts_in = self._lin.transpose([*flat_ct, *aux_zeros])
        out = [instantiate_public(ct, a) for ct, a in zip(cts_in, self._lin.in_avals)]
        return tu.tree_unflatten(self._in_tree, out)


def _flatten_vjp(f: VJPFunction):
    lin = f._lin
    others = tuple(sorted((k, v) for k, v in vars(f).items() if k != "_lin"))
    static = (lin.closed.jaxpr, tuple(lin.in_avals), tuple(lin.out_avals), tuple(lin.out_zeros), others)
    return list(lin.closed.consts), static


def _unflatten_vjp(static, residuals) -> VJPFunction:
    jaxpr, in_avals, out_avals, out_zeros, others = static
    f = object.__new__(VJPFunction)
    for k, v in others:
        setattr(f, k, v)
    f._lin = ad.LinearFunction(
        ir.ClosedJaxpr(jaxpr, list(residuals)), list(in_avals), list(out_avals), list(out_zeros)
    )
    return f


# As JAX's, the vjp function is a pytree: its leaves are the values the backward pass keeps, its
# structure the linear program (so a jitted forward pass can return it and a jitted backward pass
# take it, compiled once per structure: ``fwd_and_bwd``; ``make_jaxpr`` of a ``vjp`` returns it,
# and JAX's gradient-checkpointing tutorial flattens it to print the backward program).
tu.register_pytree_node(VJPFunction, _flatten_vjp, _unflatten_vjp)


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(fun(*primals), vjp_fn)``; ``vjp_fn(ct)`` returns a tuple of cotangents,
    one per primal. Implemented as linearize + transpose.

    >>> import funcgrad.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> float(f_vjp(1.0)[0])
    1.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    check_array_leaves("vjp", flat_p, lambda: arg_paths(primals))
    raw_p, flat_p = flat_p, canonicalize(flat_p)
    flat, store = flat_fun(fun, in_tree, has_aux, transform="vjp")
    with ad.given_primals(flat_p, raw_p):  # NOTE: [primals as the caller gave them]
        out_p, lin = ad.linearize_flat(_passing_through(flat, store), flat_p)
    _, aux = split_aux(out_p, store, has_aux)
    out = _as_returned(out_p[: store["n_out"]], store, raw_p)
    lin = ad.primals_first(lin, flat_p)  # JAX's order of the residuals (NOTE: [vjp residuals])
    lin = ad.in_context(lin, flat_p, out_p[: store["n_out"]])  # NOTE: [transpose conventions]
    fn = VJPFunction(lin, in_tree, store["out_tree"], store["n_out"])
    return (out, fn, aux) if has_aux else (out, fn)


def _check_grad_inputs(name, dyn_args, argnums, holomorphic, allow_int, forward=False):
    leaves = tu.tree_leaves(tuple(dyn_args))
    paths = lambda: arg_paths(tuple(dyn_args), argnums)  # noqa: E731 - named only on an error
    check_array_leaves(name, leaves, paths)
    check_input_dtypes(name, leaves, paths, holomorphic=holomorphic, allow_int=allow_int, forward=forward)


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """``(fun(*args), grad(fun)(*args))`` in one pass. ``holomorphic=True`` differentiates a
    holomorphic function of complex inputs (NOTE: [differentiation dtypes]).

    >>> import funcgrad.numpy as fnp
    >>> v, g = value_and_grad(lambda x: (x ** 2).sum())(fnp.array([1.0, 2.0]))
    >>> float(v), g.tolist()
    (5.0, [2.0, 4.0])
    """
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, with_value=True)


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, *, with_value: bool):
    """``value_and_grad``, and ``grad`` with ``with_value=False`` (which discards the value, so the
    eager program cache need not keep it)."""
    name = "value_and_grad" if with_value else "grad"  # (for messages only)

    @wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = normalize_argnums("grad", argnums, len(args))
        dyn = [args[i] for i in nums]
        _check_grad_inputs("grad", dyn, nums, holomorphic, allow_int)
        f = partial_over(fun, args, kwargs, nums)
        with user_transformation(name, fun):
            # Eagerly, through a recorded program (NOTE: [eager grad program cache]).
            recorded = None if holomorphic else recorded_value_and_grad(f, dyn, has_aux, with_value)
            if recorded is None:
                out, f_vjp, aux = vjp(f, *dyn, has_aux=True) if has_aux else (*vjp(f, *dyn), None)
                grads = None
            else:
                out, aux, grads, vjp_parts = recorded  # (grads: the cached program computed them)
                f_vjp = None if vjp_parts is None else VJPFunction(*vjp_parts)
        if grads is None:
            check_scalar_output("grad", out, holomorphic=holomorphic)
            seed = unit_cotangent(core.get_aval(tu.tree_leaves(out)[0]))
            grads = f_vjp(tu.tree_unflatten(tu.tree_structure(out), [seed]))
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """The gradient of a scalar function with respect to ``args[argnums]`` (pytrees allowed).

    ``grad(grad(f))`` differentiates the backward program itself (PyTorch's
    ``create_graph=True``). Outputs must be real unless ``holomorphic=True``, which takes the complex
    derivative ``f'(z)`` of a holomorphic function of complex inputs, as JAX does.

    >>> import funcgrad.numpy as fnp
    >>> float(grad(fnp.tanh)(0.0)), float(grad(grad(lambda x: x ** 3))(2.0))
    (1.0, 12.0)
    >>> complex(grad(lambda z: z ** 2, holomorphic=True)(1.0 + 2.0j))
    (2+4j)
    """
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, with_value=False)

    @wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


def stop_gradient(x):
    """The identity whose derivative is zero (PyTorch's ``detach``/``no_grad``); maps over pytrees.

    >>> float(grad(lambda x: x * stop_gradient(x))(3.0))
    3.0
    """

    def stop(leaf):
        if core.is_array_like(leaf) and _dt.is_inexact(core.get_aval(leaf).dtype):
            return _ew.stop_gradient_p.bind(leaf)
        return leaf

    return tu.tree_map(stop, x)


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear function ``fun`` at the avals of ``primals``.

    >>> import funcgrad.numpy as fnp
    >>> t = linear_transpose(lambda x: 3.0 * x, 1.0)
    >>> float(t(1.0)[0])
    3.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    in_avals = [abstractify(p) for p in flat_p]  # values or, as in JAX, ShapedArray/ShapeDtypeStruct
    flat, store = flat_fun(fun, in_tree)
    # (traced at the primals' avals, weak types kept as JAX's: the transpose of a linear function
    # at a Python float, applied to one, is weak -- custom_derivatives.linear_call's docstring)
    closed = trace_to_jaxpr(flat, in_avals)
    out_avals = closed.out_avals

    def transposed(*cotangents):
        flat_ct, ct_tree = tu.tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)
        if len(flat_ct) != len(out_avals):
            raise TypeError(
                f"linear_transpose: expected {len(out_avals)} cotangent leaves, got {len(flat_ct)}"
            )
        undefined = [ad.UndefinedPrimal(a) for a in in_avals]
        cts = ad.backward_pass(closed.jaxpr, closed.consts, undefined, flat_ct)
        return tuple(tu.tree_unflatten(in_tree, [instantiate_public(c, a) for c, a in zip(cts, in_avals)]))

    return transposed


# ----------------------------------------------------------------------------------------------
# vmap


def _mapped_size(leaf, axis):
    return core.get_aval(leaf).shape[axis]


def vmap(
    fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None, axis_name=None, spmd_axis_name=None
):
    """Vectorise ``fun`` over the ``in_axes`` of its arguments (a pytree prefix; ``None`` means
    broadcast); outputs get their mapped axis at ``out_axes``. ``spmd_axis_name`` (a mesh axis
    name or a tuple of them) splits the mapped dimension of the sharding constraints inside over
    those mesh axes, as JAX's.

    >>> import funcgrad.numpy as fnp
    >>> vmap(lambda x, y: x @ y, in_axes=(0, None))(fnp.ones((5, 3)), fnp.ones(3)).shape
    (5,)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    spmd = _spmd_names(spmd_axis_name)
    if not (in_axes is None or isinstance(in_axes, int | tuple | dict)):
        raise TypeError(
            f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments, got {in_axes!r}"
        )

    @wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must have one entry per positional argument: got in_axes of length "
                f"{len(in_axes)} for {len(args)} argument{'s' if len(args) != 1 else ''}"
            )
        all_args = (args, kwargs)
        flat_args, in_tree = tu.tree_flatten(all_args)
        try:
            in_dims = tu.broadcast_prefix((in_axes, 0), all_args)
        except ValueError as e:
            raise ValueError(
                f"vmap in_axes specification must be a tree prefix of the arguments: in_axes "
                f"{in_axes!r} does not match the arguments' structure {tu.tree_structure(args)}"
            ) from e
        paths = arg_paths((*args, kwargs))
        # Only mapped leaves must be arrays: an unmapped (``None``) leaf reaches ``fun`` as it is,
        # as in JAX (equinox vmaps a model whose activation function is a leaf, with in_axes None).
        check_array_leaves(
            "vmap",
            [x for x, d in zip(flat_args, in_dims) if d is not None],
            lambda: [p for p, d in zip(paths, in_dims) if d is not None],
        )
        # Unmapped leaves pass as given (a static argument of a jit inside stays hashable, as in
        # JAX: blackjax vmaps jit(f, static_argnums=...) with the static value at in_axes None).
        mapped = canonicalize([x for x, d in zip(flat_args, in_dims) if d is not None])
        flat_args = [mapped.pop(0) if d is not None else x for x, d in zip(flat_args, in_dims)]
        sizes: dict[int, list[str]] = {}
        dims = []
        for leaf, d, path in zip(flat_args, in_dims, paths):
            if d is None:
                dims.append(None)
                continue
            if not isinstance(d, int | np.integer):
                raise TypeError(f"vmap in_axes leaves must be ints or None, got {d!r} for {path}")
            ndim = core.get_aval(leaf).ndim
            if not -ndim <= d < ndim:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {d}, which implies that "
                    f"its rank should be at least {max(d + 1, -d)}, but is only {ndim} (its shape "
                    f"is {core.get_aval(leaf).shape}) for {path}"
                )
            d = int(d) % ndim
            dims.append(d)
            sizes.setdefault(_mapped_size(leaf, d), []).append(path)
            if spmd:
                _check_spmd_axis(spmd, core.get_aval(leaf), d)
        if len(sizes) > 1:
            detail = "; ".join(f"{', '.join(p)} have size {s}" for s, p in sizes.items())
            raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {detail}")
        if sizes:
            (size,) = sizes
            if axis_size is not None and axis_size != size:
                raise ValueError(f"vmap: axis_size={axis_size} but the mapped inputs have size {size}")
        elif axis_size is not None:
            size = axis_size
        else:
            raise ValueError("vmap must have at least one non-None value in in_axes (or be given axis_size)")
        with user_transformation("vmap", fun):
            flat, store = flat_fun(lambda a, k: fun(*a, **k), in_tree)

        def out_dims():
            dummy = tu.tree_unflatten(store["out_tree"], [0] * store["n_out"])
            try:
                return tu.broadcast_prefix(out_axes, dummy)
            except ValueError as e:
                raise ValueError(
                    f"vmap out_axes specification {out_axes!r} must be a tree prefix of the "
                    f"outputs' structure {store['out_tree']}"
                ) from e

        def out_paths():  # (for the error of an out_axes=None output that is batched)
            dummy = tu.tree_unflatten(store["out_tree"], [0] * store["n_out"])
            return [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(dummy)]

        with _sharding_prims.spmd_axis_name(spmd):
            outs = batching.vmap_flat(flat, size, dims, out_dims, flat_args, axis_name, out_paths)
        # An output left unmapped (out_axes None) that is not an array (a Python scalar, a NumPy
        # array) comes back as the function returned it, as in JAX.
        keep = [od is None and not isinstance(o, Array | core.Tracer) for o, od in zip(outs, out_dims())]
        core.check_leaks_now()  # (NOTE: [leak checking])
        return tu.tree_unflatten(store["out_tree"], [o if k else to_public(o) for o, k in zip(outs, keep)])

    return vmapped


def _spmd_names(spmd_axis_name) -> tuple:
    if spmd_axis_name is None:
        return ()
    names = (spmd_axis_name,) if isinstance(spmd_axis_name, str) else spmd_axis_name
    if not isinstance(names, tuple | list) or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"vmap: spmd_axis_name must be a mesh axis name or a tuple of them, got {spmd_axis_name!r}"
        )
    return tuple(names)


def _check_spmd_axis(spmd: tuple, aval, d: int) -> None:
    """JAX's rule: a mapped dimension already split over explicit mesh axes must be split over
    ``spmd_axis_name`` itself."""
    s = getattr(aval, "sharding", None)
    if s is None:
        return
    entry = tuple(s.spec)[d] if d < len(s.spec) else None
    have = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
    if have and have != spmd:
        raise ValueError(
            "Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type is allowed. Got "
            f"spmd_axis_name={spmd} and arrays sharded on explicit_mesh_axis={have}"
        )


# ----------------------------------------------------------------------------------------------
# Jacobians and Hessians


def _std_basis(leaves):
    """The identity matrix split per leaf: leaf i gets shape (N, *leaf_shape)."""
    avals = [core.get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    total = int(sum(sizes))
    dtype = _dt.result_type(*[(a.dtype, False) for a in avals])[0] if avals else _dt.float64
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for a, s in zip(avals, sizes):
        out.append(eye[:, start : start + s].reshape((total, *a.shape)).astype(a.dtype))
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

    @wraps(fun)
    def jacfun(*args, **kwargs):
        nums = normalize_argnums("jacfwd", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacfwd", dyn, nums, holomorphic, allow_int=False, forward=True)
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


def _assemble_jacobian(jac_leaves, out_avals, in_avals, in_tree, out_tree, single_arg):
    """Split per-output Jacobians, stacked along a last flattened-input axis, into
    ``out.shape + in.shape`` blocks per input leaf."""
    sizes = [a.size for a in in_avals]
    offsets = np.cumsum([0, *sizes])
    per_out = []
    for jac, oa in zip(jac_leaves, out_avals):
        blocks = []
        for ia, start, stop in zip(in_avals, offsets[:-1], offsets[1:]):
            piece = fnp.reshape(jac[..., int(start) : int(stop)], (*oa.shape, *ia.shape))
            blocks.append(to_public(_typed_like(piece, oa)))
        tree = tu.tree_unflatten(in_tree, blocks)
        per_out.append(tree[0] if single_arg else tree)
    return tu.tree_unflatten(out_tree, per_out)


def _typed_like(block, example: ir.ShapedArray):
    """A Jacobian block with the weak type of the leaf JAX types it after (jacfwd: the output
    leaf, jacrev: the input leaf), so ``jacfwd(jnp.sin)(1.0)`` is weakly typed as in JAX."""
    aval = core.get_aval(block)
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

    @wraps(fun)
    def jacfun(*args, **kwargs):
        nums = normalize_argnums("jacrev", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacrev", dyn, nums, holomorphic, allow_int)
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
        basis = _std_basis(y_leaves)

        def pull(*ct_leaves):
            return tu.tree_leaves(f_vjp(tu.tree_unflatten(out_tree, ct_leaves)))

        cts = vmap(pull)(*basis)  # per input leaf: (M, *in_shape)
        # Rearrange to per-output blocks: out.shape + in.shape.
        m_sizes = [a.size for a in out_avals]
        m_off = np.cumsum([0, *m_sizes])
        per_out = []
        for oa, start, stop in zip(out_avals, m_off[:-1], m_off[1:]):
            blocks = [
                to_public(_typed_like(fnp.reshape(ct[int(start) : int(stop)], (*oa.shape, *ia.shape)), ia))
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
        flat_in, in_tree = tu.tree_flatten(dyn)
        names = named_arg_paths(fun, dyn, nums)
        # (a ShapeDtypeStruct or ShapedArray stands for its abstract value, a ShapeDtypeStruct's
        # sharding included, as in JAX)
        check_array_leaves("make_jaxpr", [0 if is_abstract(x) else x for x in flat_in], names)
        flat, store = flat_fun(f, in_tree)
        avals = [abstractify(x) for x in flat_in]
        with batching.extend_axis_env(frames):
            closed = trace_to_jaxpr(
                flat, avals, names, f"make_jaxpr({getattr(fun, '__name__', 'fun')})", dce=False
            )
        if return_shape:
            shapes = tu.tree_unflatten(
                store["out_tree"], [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
            )
            return closed, shapes
        return closed

    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes and dtypes of ``fun(*args)`` without computing anything.

    >>> import funcgrad.numpy as fnp
    >>> eval_shape(lambda x: x @ x.T, ShapeDtypeStruct((3, 4), "float32"))
    ShapeDtypeStruct(shape=(3, 3), dtype=float32)
    """
    flat_in, in_tree = tu.tree_flatten((args, kwargs), lambda x: isinstance(x, ShapeDtypeStruct))
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
        leaves, tree = tu.tree_flatten(fun(*a, **k))
        given.update((i, x) for i, x in enumerate(leaves) if isinstance(x, ShapeDtypeStruct))
        return tu.tree_unflatten(tree, [0 if i in given else x for i, x in enumerate(leaves)])

    flat, store = flat_fun(traced, in_tree)
    closed, n_outs, _ = trace_stateful(flat, avals, None, "eval_shape", state)
    return tu.tree_unflatten(
        store["out_tree"],
        [
            given[i] if i in given else ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=a.sharding)
            for i, a in enumerate(closed.out_avals[:n_outs])
        ],
    )


# ----------------------------------------------------------------------------------------------
# Values


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Make every leaf of ``x`` an ``Array``; with ``device`` (one of ``funcgrad.devices()``), a
    copy held in that device's memory; with a ``Sharding`` (or a pytree prefix of ``x`` of them),
    each leaf laid out over the devices as it says (``NamedSharding(mesh, P("x"))``: split along
    the mesh axis "x"). Leaves that are not arrays (``"abc"``) and devices that are not devices
    (``"cpu"``) raise ``TypeError``; a shape the sharding does not divide raises ``ValueError``.
    ``src``, ``donate`` and ``may_alias`` are JAX's keywords: funcgrad never deletes ``x`` (a
    donation is a permission, not a promise) and a placed value never aliases a NumPy argument.

    >>> import funcgrad
    >>> device_put({"w": 1.0, "b": [2, 3]}, funcgrad.devices()[0])["b"][1]
    Array(3, dtype=int64, weak_type=True)
    """
    del src, donate, may_alias  # (see the docstring)
    layout = sys.modules.get("funcgrad.experimental.layout")  # no Format exists before it is imported
    if device is not None and layout is not None:
        device = layout._formats_as_shardings(x, device)  # a Format places by its sharding
    if device is not None and not isinstance(device, xla_bridge.sharded.Device):
        if any(
            isinstance(s, Sharding | PartitionSpec)  # a bare spec: over the mesh in scope (set_mesh)
            for s in tu.tree_leaves(device, is_leaf=lambda s: isinstance(s, Sharding | PartitionSpec))
        ):
            return _placement.device_put_sharded(x, device)
    if device is not None:
        try:
            xla_bridge.resolve_device(device=device)
        except (TypeError, ValueError) as e:
            raise ValueError(  # (jax's type for a device that is not one)
                f"device_put: device must be one of funcgrad.devices() (or None), e.g. "
                f"funcgrad.devices('cpu')[0] ({e})"
            ) from None
    leaves, tree = tu.tree_flatten(x)
    for i, v in enumerate(leaves):
        if not core.is_array_like(v):
            path = tu.keystr(tu.tree_leaves_with_path(x)[i][0])
            raise TypeError(
                f"device_put: x{path} of type {type(v).__name__} ({v!r:.60}) is not an array; "
                "funcgrad arrays hold numbers (bool, int, float, complex or arrays of them)"
            )

    def put(v):
        v = fnp.asarray(v)
        if device is None or isinstance(v, core.Tracer):
            return v  # a traced value has no memory to place: the staged program decides
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
